package rest

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/resources"
)

// ConfigInfo is the body of /ws/v1/config: the queue config in force,
// rendered with the keys of YuniKorn's queue-config YAML (so it reads like
// the file it came from), and its version.
type ConfigInfo struct {
	// Checksum is the hex SHA-256 of the YAML text in force: its version.
	// Empty when no config is in force (no limits; usage is still tracked).
	Checksum string `json:"checksum"`
	// Partition is the partition this scheduler enforces.
	Partition string `json:"partition"`
	// Partitions are every partition of the config.
	Partitions []PartitionInfo `json:"partitions"`
	// Notices are the keys accepted but not acted on yet.
	Notices []string `json:"notices"`
}

// PartitionInfo is one partition of the config in force.
type PartitionInfo struct {
	Name   string      `json:"name"`
	Queues []QueueInfo `json:"queues"`
}

// QueueInfo is one queue. Quantities are Kubernetes quantity strings, as in
// the YAML ("500m", "25G"), or percentages ("25%") where the YAML gave one
// (elastic queues); cpu is named cpu whether the YAML said vcore or cpu.
type QueueInfo struct {
	Name            string            `json:"name"`
	QueuePath       string            `json:"queuePath"`
	Parent          bool              `json:"parent,omitempty"`
	Resources       *ResourcesInfo    `json:"resources,omitempty"`
	MaxApplications uint64            `json:"maxapplications,omitempty"`
	Properties      map[string]string `json:"properties,omitempty"`
	AdminACL        string            `json:"adminacl,omitempty"`
	SubmitACL       string            `json:"submitacl,omitempty"`
	Limits          []LimitInfo       `json:"limits,omitempty"`
	Queues          []QueueInfo       `json:"queues,omitempty"`
}

// ResourcesInfo is a queue's resources section.
type ResourcesInfo struct {
	Guaranteed map[string]string `json:"guaranteed,omitempty"`
	Max        map[string]string `json:"max,omitempty"`
}

// LimitInfo is one entry of a queue's limits.
type LimitInfo struct {
	Limit           string            `json:"limit,omitempty"`
	Users           []string          `json:"users,omitempty"`
	Groups          []string          `json:"groups,omitempty"`
	MaxResources    map[string]string `json:"maxresources,omitempty"`
	MaxApplications uint64            `json:"maxapplications,omitempty"`
}

// config serves /ws/v1/config. Every replica has the config (each watches
// the ConfigMap), so it is not limited to the leader.
func (s *server) config(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.configInfo())
}

func (s *server) configInfo() ConfigInfo {
	info := ConfigInfo{Partition: s.opts.Partition, Partitions: []PartitionInfo{}, Notices: []string{}}
	var cfg *queueconfig.Config
	if s.opts.Config != nil {
		cfg = s.opts.Config()
	}
	if cfg == nil {
		return info
	}
	info.Checksum = cfg.Checksum
	info.Notices = append(info.Notices, cfg.Notices...)
	for _, p := range cfg.Partitions {
		pi := PartitionInfo{Name: p.Name, Queues: []QueueInfo{}}
		if p.Root != nil {
			pi.Queues = append(pi.Queues, queueInfo(p.Root))
		}
		info.Partitions = append(info.Partitions, pi)
	}
	return info
}

func queueInfo(q *queueconfig.Queue) QueueInfo {
	qi := QueueInfo{
		Name:            q.Name,
		QueuePath:       q.Path,
		Parent:          q.IsParent,
		MaxApplications: q.MaxApplications,
		Properties:      q.Properties,
		AdminACL:        q.AdminACL,
		SubmitACL:       q.SubmitACL,
	}
	g := withPercents(vectorStrings(q.Guaranteed), q.Sharing.GuaranteedPct)
	m := withPercents(limitStrings(q.Max), q.Sharing.MaxPct)
	if g != nil || m != nil {
		qi.Resources = &ResourcesInfo{Guaranteed: g, Max: m}
	}
	for _, l := range q.Limits {
		qi.Limits = append(qi.Limits, LimitInfo{
			Limit:           l.Description,
			Users:           l.Users,
			Groups:          l.Groups,
			MaxResources:    limitStrings(l.MaxResources),
			MaxApplications: l.MaxApplications,
		})
	}
	for _, c := range q.Children {
		qi.Queues = append(qi.Queues, queueInfo(c))
	}
	return qi
}

// withPercents adds the entries written as percentages (in
// 1/queueconfig.PercentScale of a percent) to m, rendered as in the YAML.
func withPercents(m map[string]string, pct map[resources.ID]int64) map[string]string {
	if len(pct) == 0 {
		return m
	}
	if m == nil {
		m = make(map[string]string, len(pct))
	}
	for id, p := range pct {
		s := strconv.FormatInt(p/queueconfig.PercentScale, 10)
		if frac := p % queueconfig.PercentScale; frac != 0 {
			s += strings.TrimRight(fmt.Sprintf(".%03d", frac), "0")
		}
		m[id.Name()] = s + "%"
	}
	return m
}

// limitStrings renders a limit's bounds, zeros included (a zero blocks).
func limitStrings(l resources.Limit) map[string]string {
	if l == nil {
		return nil
	}
	m := make(map[string]string, len(l))
	for _, b := range l {
		m[b.ID.Name()] = resources.FormatValue(b.ID, b.Max)
	}
	return m
}

// vectorStrings renders the non-zero amounts of v.
func vectorStrings(v resources.Vector) map[string]string {
	if v.IsZero() {
		return nil
	}
	m := map[string]string{}
	for i, x := range v {
		if x != 0 {
			m[resources.ID(i).Name()] = resources.FormatValue(resources.ID(i), x)
		}
	}
	return m
}

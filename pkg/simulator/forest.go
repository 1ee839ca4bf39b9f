package simulator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/userquota/userquota/pkg/plugins/userquota/reclaim"
	"github.com/userquota/userquota/pkg/podmeta"
	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/ugm"
)

// Quota trees (docs/forests.md, docs/simulator.md "Quota trees"): the
// initial config carries trees given beside it (Options.Trees, the
// command's --tree), a config line its own ("trees": a list of QuotaTree
// objects; none without the key), and an allocate line names the pod's
// nodes with "trees":{"TreeName":"node"}, which stands for the labels
// tree.userquota.io/TreeName the scheduler reads (a "labels" entry with
// that key does the same).

// configTrees reads a config line's "trees": a list of QuotaTree
// objects, each keyed "trees[i]" for messages. Absent or null: none.
func configTrees(raw json.RawMessage) (map[string]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf(`"trees" is a list of QuotaTree objects: %v`, err)
	}
	out := make(map[string]string, len(list))
	for i, t := range list {
		out[fmt.Sprintf("trees[%d]", i)] = string(t)
	}
	return out, nil
}

// podTrees is an allocate line's part in the quota trees: its "labels"
// with the nodes of its "trees" added as the labels they stand for; nil
// when neither names a tree's node. The labels it returns are what
// placement reads too.
func podTrees(l *traceLine) (map[string]string, *ugm.TreePart, error) {
	labels := l.Labels
	if len(l.Trees) > 0 && string(l.Trees) != "null" {
		dec := json.NewDecoder(bytes.NewReader(l.Trees))
		var nodes map[string]string
		if err := dec.Decode(&nodes); err != nil {
			return nil, nil, fmt.Errorf(`"trees" is an object of tree names to node names, e.g. {"gpu":"h100-org1"}: %v`, err)
		}
		labels = make(map[string]string, len(l.Labels)+len(nodes))
		for k, v := range l.Labels {
			labels[k] = v
		}
		names := make([]string, 0, len(nodes))
		for name := range nodes {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if name == "" {
				return nil, nil, errors.New(`"trees" names a tree ""`)
			}
			key := podmeta.TreeLabel(name)
			if v, ok := l.Labels[key]; ok && v != nodes[name] {
				return nil, nil, fmt.Errorf(`"trees" names node %q of tree %s and "labels" %s=%q`, nodes[name], name, key, v)
			}
			labels[key] = nodes[name]
		}
	}
	for k := range labels {
		if strings.HasPrefix(k, podmeta.LabelTreePrefix) {
			return labels, &ugm.TreePart{Labels: labels}, nil
		}
	}
	return labels, nil, nil
}

// loadConfig parses and validates a whole config with its trees and picks
// the partition. On failure it returns every problem, one per element.
func loadConfig(text []byte, trees map[string]string, name string) (*queueconfig.Config, *queueconfig.Partition, []string) {
	cfg, err := queueconfig.LoadWithTrees(text, trees, "")
	if err != nil {
		problems := queueconfig.Problems(err)
		if len(problems) == 0 {
			problems = []string{"invalid config"}
		}
		return nil, nil, problems
	}
	p := cfg.Partition(name)
	if p == nil {
		return nil, nil, []string{fmt.Sprintf("partition %q is not in the config", name)}
	}
	return cfg, p, nil
}

// borrowed is, by tree, the node above its own the live pod is allocated
// at (ugm.TreeNode.ANode), nil when none.
func (s *sim) borrowed(pod string) map[string]string {
	c, ok := s.ledger.Get(pod)
	if !ok || c.Request.Trees == nil {
		return nil
	}
	var out map[string]string
	for _, n := range c.Request.Trees.Nodes {
		if n.Borrowed() {
			if out == nil {
				out = map[string]string{}
			}
			out[n.Tree] = n.ANode
		}
	}
	return out
}

// liveInfo is what the simulator keeps of an allowed pod for a tree
// preemption: its priority and its line's position.
type liveInfo struct {
	priority int32
	created  time.Time
}

// preemptedLine is {"pod":"c2","preempted":true,"by":"b2","reason":"..."}:
// a live pod preempted to make room for the pod of an allocate line.
type preemptedLine struct {
	Pod       string `json:"pod"`
	Preempted bool   `json:"preempted"`
	By        string `json:"by"`
	Reason    string `json:"reason"`
}

// preemptForTrees preempts for p, refused as d says, when quota tree
// nodes refused it that pods allocated there from below (borrowers of
// soft nodes) hold (ugm.Decision.TreeNeeds), as the plugin's PostFilter
// does: reclaim.State chooses the victims (who gives way, least
// important first, no more than the need), the cluster standing as one
// node without capacity (the simulator has none). Each victim is released
// and printed; it reports whether any was. Only an allocate line's first
// decision preempts (a held pod let in later does not), and a victim's
// release lets no held pod in: the room goes to p.
func (s *sim) preemptForTrees(p *pendingPod, d decision) bool {
	var r *ugm.Refusal
	if !errors.As(d.reason, &r) || r.Who != ugm.WhoTree {
		return false
	}
	req := *d.placed
	dec := s.ledger.Manager().Decide(p.name, func(*ugm.InForce, ugm.Queues) (ugm.Request, error) { return req, nil }, true)
	if len(dec.TreeNeeds) == 0 || len(dec.Blocked) > 0 {
		return false
	}
	rs, why := reclaim.NewState(reclaim.Preemptor{Queue: req.Queue, Priority: p.priority, Resources: req.Resources, TreeNeeds: dec.TreeNeeds},
		reclaim.Cluster{Config: s.partition})
	if why != "" {
		return false
	}
	var pods []*reclaim.Victim
	for _, name := range s.ledger.Pods() {
		c, _ := s.ledger.Get(name)
		info := s.live[name]
		pods = append(pods, &reclaim.Victim{Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}, Key: name,
			Queue: c.Request.Queue, Res: c.Request.Resources, Priority: info.priority, Start: info.created,
			Preemptible: !c.Request.NonPreemptible, Trees: c.Request.Trees})
	}
	res, err := rs.SelectOnNode(pods, nil, unbounded{})
	if err != nil || len(res.Victims) == 0 {
		return false
	}
	for _, v := range res.Victims {
		c, _ := s.ledger.Get(v.Key)
		why, _ := rs.WhyCharge(c.Request, v.Priority)
		delete(s.running, v.Key)
		delete(s.live, v.Key)
		if c, ok, err := s.ledger.Release(v.Key); ok {
			s.completed(&c)
		} else if err != nil {
			s.logf("preempt %s: %v\n", v.Key, err)
		}
		s.leave(v.Key)
		s.emit(preemptedLine{Pod: v.Key, Preempted: true, By: p.name, Reason: why})
	}
	return true
}

// unbounded is the cluster as reclaim.Node: no capacity, so the
// preemptor always fits it; only the quota chooses.
type unbounded struct{}

func (unbounded) Remove(*reclaim.Victim) error { return nil }
func (unbounded) Add(*reclaim.Victim) error    { return nil }
func (unbounded) Fits() bool                   { return true }

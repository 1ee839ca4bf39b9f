package simulator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

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

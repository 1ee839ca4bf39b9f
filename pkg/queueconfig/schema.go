package queueconfig

import (
	"go.yaml.in/yaml/v3"
)

// This file knows YuniKorn's queue-config layout (yunikorn-core
// pkg/common/configs/config.go): which keys exist where and what kind of
// value each holds. It turns the YAML tree into raw* values that still carry
// positions; build.go and validate.go work on those.

// rawConfig is the whole document.
type rawConfig struct {
	partitions []*rawPartition
	p          pos // of the partitions key
	checksum   pos // of a "checksum" key, if any
}

type rawPartition struct {
	p    pos
	name string

	queues    []*rawQueue
	queuesSet bool // a list, possibly empty (YuniKorn: "queue config is not set" otherwise)
	queuesP   pos

	limits  []*rawLimit
	limitsP pos

	rules  []*rawRule
	rulesP pos

	preemption     PartitionPreemption
	preemptionP    pos
	preemptionSet  bool
	nodeSort       NodeSortPolicy
	nodeSortP      pos
	nodeSortSet    bool
	weightP        map[string]pos
	resolver       UserGroupResolver
	resolverP      pos
	resolverSet    bool
	placementRules bool // placementrules given and not empty
}

type rawQueue struct {
	p      pos
	name   string
	nameP  pos
	parent bool

	resourcesP pos
	guaranteed resSpec
	max        resSpec

	maxApps  uint64
	maxAppsP pos

	properties  map[string]string
	propertiesP pos
	adminACL    string
	adminACLP   pos
	adminSet    bool
	submitACL   string
	submitACLP  pos
	submitSet   bool

	childTemplate  *ChildTemplate
	childTemplateP pos
	templateRes    [2]resSpec // guaranteed, max

	queues  []*rawQueue
	limits  []*rawLimit
	limitsP pos
}

type rawLimit struct {
	p       pos
	desc    string
	users   []string
	usersP  []pos
	groups  []string
	groupsP []pos
	maxRes  resSpec
	maxApps uint64
	appsP   pos
}

type rawRule struct {
	p       pos
	rule    PlacementRule // Name as written, Parent unset
	nameP   pos
	filterP pos
	parent  *rawRule
	// valueP and createP are where value and create are written; line 0
	// when they are not.
	valueP  pos
	createP pos
}

// walkDocument reads the top level: partitions (and YuniKorn's own
// checksum key, which we accept and ignore).
func (w *walker) walkDocument(doc *yaml.Node) *rawConfig {
	cfg := &rawConfig{}
	root := doc
	if doc.Kind == yaml.DocumentNode {
		if len(doc.Content) == 0 {
			return cfg
		}
		root = doc.Content[0]
	}
	top := pos{line: root.Line}
	res := w.object(root, top, "the queue config", []field{
		{"partitions", func(v *yaml.Node, p pos) {
			cfg.p = p
			w.list(v, p, "partitions", func(_ int, item *yaml.Node, ip pos) {
				if rp := w.walkPartition(item, ip); rp != nil {
					cfg.partitions = append(cfg.partitions, rp)
				}
			})
		}},
		{"checksum", func(v *yaml.Node, p pos) {
			cfg.checksum = p
			w.str(v, p)
		}},
	})
	if res == objBad {
		return nil
	}
	return cfg
}

func (w *walker) walkPartition(n *yaml.Node, p pos) *rawPartition {
	rp := &rawPartition{p: p, weightP: map[string]pos{}}
	res := w.object(n, p, "a partition", []field{
		{"name", func(v *yaml.Node, vp pos) {
			rp.name, _ = w.str(v, vp)
		}},
		{"queues", func(v *yaml.Node, vp pos) {
			rp.queuesP = vp
			rp.queuesSet = w.list(v, vp, "queues", func(_ int, item *yaml.Node, ip pos) {
				if q := w.walkQueue(item, ip); q != nil {
					rp.queues = append(rp.queues, q)
				}
			})
		}},
		{"placementrules", func(v *yaml.Node, vp pos) {
			rp.rulesP = vp
			w.list(v, vp, "placement rules", func(_ int, item *yaml.Node, ip pos) {
				if r := w.walkRule(item, ip, 0); r != nil {
					rp.rules = append(rp.rules, r)
				}
			})
			rp.placementRules = len(rp.rules) > 0
		}},
		{"limits", func(v *yaml.Node, vp pos) {
			rp.limitsP = vp
			rp.limits = w.walkLimits(v, vp)
		}},
		{"preemption", func(v *yaml.Node, vp pos) {
			rp.preemptionP = vp
			rp.preemptionSet = objOK == w.object(v, vp, "preemption", []field{
				{"enabled", func(v *yaml.Node, bp pos) {
					if b, set, ok := w.boolean(v, bp); ok && set {
						rp.preemption.Enabled = &b
					}
				}},
				{"quotapreemptionenabled", func(v *yaml.Node, bp pos) {
					if b, set, ok := w.boolean(v, bp); ok && set {
						rp.preemption.QuotaPreemptionEnabled = &b
					}
				}},
			})
		}},
		{"nodesortpolicy", func(v *yaml.Node, vp pos) {
			rp.nodeSortP = vp
			rp.nodeSortSet = objOK == w.object(v, vp, "a node sort policy", []field{
				{"type", func(v *yaml.Node, tp pos) {
					rp.nodeSort.Type, _ = w.str(v, tp)
				}},
				{"resourceweights", func(v *yaml.Node, rwp pos) {
					n, leave, ok := w.enter(v, rwp)
					if !ok {
						return
					}
					defer leave()
					if isNull(n) {
						return
					}
					if n.Kind != yaml.MappingNode {
						w.errs.at(rwp, "expected a mapping of resource names to weights, got %s", describe(n))
						return
					}
					rp.nodeSort.ResourceWeights = map[string]float64{}
					for _, e := range w.pairs(n, rwp) {
						ep := childPos(rwp, e.key, valueLine(e))
						if f, ok := w.number(e.val, ep); ok {
							rp.nodeSort.ResourceWeights[e.key] = f
							rp.weightP[e.key] = ep
						}
					}
				}},
			})
		}},
		{"usergroupresolver", func(v *yaml.Node, vp pos) {
			rp.resolverP = vp
			rp.resolverSet = objOK == w.object(v, vp, "a user group resolver", []field{
				{"type", func(v *yaml.Node, tp pos) {
					rp.resolver.Type, _ = w.str(v, tp)
				}},
			})
		}},
	})
	if res == objBad {
		return nil
	}
	// A null list item reads as an empty partition (as in yaml.v3), which
	// validation then reports as having no queues.
	return rp
}

func (w *walker) walkQueue(n *yaml.Node, p pos) *rawQueue {
	q := &rawQueue{p: p}
	q.guaranteed.ok, q.max.ok = true, true
	q.templateRes[0].ok, q.templateRes[1].ok = true, true
	res := w.object(n, p, "a queue", []field{
		{"name", func(v *yaml.Node, vp pos) {
			q.nameP = vp
			q.name, _ = w.str(v, vp)
		}},
		{"parent", func(v *yaml.Node, vp pos) {
			q.parent, _, _ = w.boolean(v, vp)
		}},
		{"resources", func(v *yaml.Node, vp pos) {
			q.resourcesP = vp
			q.guaranteed, q.max = w.walkResources(v, vp)
		}},
		{"maxapplications", func(v *yaml.Node, vp pos) {
			q.maxAppsP = vp
			q.maxApps, _ = w.count(v, vp)
		}},
		{"properties", func(v *yaml.Node, vp pos) {
			q.propertiesP = vp
			q.properties = w.strMap(v, vp, "queue properties")
		}},
		{"adminacl", func(v *yaml.Node, vp pos) {
			q.adminACLP = vp
			q.adminACL, q.adminSet = w.optStr(v, vp)
		}},
		{"submitacl", func(v *yaml.Node, vp pos) {
			q.submitACLP = vp
			q.submitACL, q.submitSet = w.optStr(v, vp)
		}},
		{"childtemplate", func(v *yaml.Node, vp pos) {
			q.childTemplateP = vp
			ct := &ChildTemplate{}
			if objOK == w.object(v, vp, "a child template", []field{
				{"maxapplications", func(v *yaml.Node, cp pos) {
					ct.MaxApplications, _ = w.count(v, cp)
				}},
				{"properties", func(v *yaml.Node, cp pos) {
					ct.Properties = w.strMap(v, cp, "child template properties")
				}},
				{"resources", func(v *yaml.Node, cp pos) {
					q.templateRes[0], q.templateRes[1] = w.walkResources(v, cp)
				}},
			}) {
				q.childTemplate = ct
			}
		}},
		{"queues", func(v *yaml.Node, vp pos) {
			w.list(v, vp, "queues", func(_ int, item *yaml.Node, ip pos) {
				if c := w.walkQueue(item, ip); c != nil {
					q.queues = append(q.queues, c)
				}
			})
		}},
		{"limits", func(v *yaml.Node, vp pos) {
			q.limitsP = vp
			q.limits = w.walkLimits(v, vp)
		}},
	})
	if res == objBad {
		return nil
	}
	// null reads as a queue without a name, which validation reports.
	return q
}

// walkResources reads a queue's or template's resources: {guaranteed, max}.
func (w *walker) walkResources(n *yaml.Node, p pos) (g, m resSpec) {
	g.ok, m.ok = true, true
	w.object(n, p, "queue resources", []field{
		{"guaranteed", func(v *yaml.Node, vp pos) {
			g = w.resourceMap(v, vp, "guaranteed resources", true)
		}},
		{"max", func(v *yaml.Node, vp pos) {
			m = w.resourceMap(v, vp, "maximum resources", true)
		}},
	})
	return g, m
}

func (w *walker) walkLimits(n *yaml.Node, p pos) []*rawLimit {
	var out []*rawLimit
	w.list(n, p, "limits", func(_ int, item *yaml.Node, ip pos) {
		l := &rawLimit{p: ip}
		l.maxRes.ok = true
		res := w.object(item, ip, "a limit", []field{
			{"limit", func(v *yaml.Node, vp pos) {
				l.desc, _ = w.str(v, vp)
			}},
			{"users", func(v *yaml.Node, vp pos) {
				l.users, l.usersP = w.strList(v, vp, "user names")
			}},
			{"groups", func(v *yaml.Node, vp pos) {
				l.groups, l.groupsP = w.strList(v, vp, "group names")
			}},
			{"maxresources", func(v *yaml.Node, vp pos) {
				l.maxRes = w.resourceMap(v, vp, "maxresources", false)
			}},
			{"maxapplications", func(v *yaml.Node, vp pos) {
				l.appsP = vp
				l.maxApps, _ = w.count(v, vp)
			}},
		})
		// null reads as an empty limit, which validation reports.
		if res != objBad {
			out = append(out, l)
		}
	})
	return out
}

// walkRule reads a placement rule; parent rules nest.
func (w *walker) walkRule(n *yaml.Node, p pos, depth int) *rawRule {
	r := &rawRule{p: p}
	res := w.object(n, p, "a placement rule", []field{
		{"name", func(v *yaml.Node, vp pos) {
			r.nameP = vp
			r.rule.Name, _ = w.str(v, vp)
		}},
		{"create", func(v *yaml.Node, vp pos) {
			r.createP = vp
			r.rule.Create, _, _ = w.boolean(v, vp)
		}},
		{"filter", func(v *yaml.Node, vp pos) {
			r.filterP = vp
			w.object(v, vp, "a placement rule filter", []field{
				{"type", func(v *yaml.Node, tp pos) {
					r.rule.Filter.Type, _ = w.str(v, tp)
				}},
				{"users", func(v *yaml.Node, tp pos) {
					r.rule.Filter.Users, _ = w.strList(v, tp, "user names")
				}},
				{"groups", func(v *yaml.Node, tp pos) {
					r.rule.Filter.Groups, _ = w.strList(v, tp, "group names")
				}},
			})
		}},
		{"parent", func(v *yaml.Node, vp pos) {
			r.parent = w.walkRule(v, vp, depth+1)
		}},
		{"value", func(v *yaml.Node, vp pos) {
			r.valueP = vp
			r.rule.Value, _ = w.str(v, vp)
		}},
	})
	if res == objBad || res == objNull && depth > 0 {
		// Reported, or `parent:` left empty (no parent rule).
		return nil
	}
	// A null rule in the list reads as a rule without a name, reported later.
	return r
}

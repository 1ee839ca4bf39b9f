package queueconfig

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/userquota/userquota/pkg/resources"
)

// Queue properties of fair let-in order among users or groups
// (docs/fairness.md). Ours, in YuniKorn's property style: YuniKorn keeps
// unknown properties as opaque strings, so a config with them still loads
// there.
const (
	// PropFairness orders a queue's held pods by their user's (user) or
	// primary group's (group) usage of the queue, lowest first; off
	// turns an inherited setting off below.
	PropFairness = "userquota.fairness"
	// PropFairnessHalfLife decays the usage counted: a Go duration above
	// 0 (24h). Without it only the usage of now counts.
	PropFairnessHalfLife = "userquota.fairness.halflife"
	// PropFairnessWeights are weights per user or group name,
	// "alice=2,bob=0.5" ("*" the default, else 1): usage counts divided
	// by the weight.
	PropFairnessWeights = "userquota.fairness.weights"

	FairnessUser  = "user"
	FairnessGroup = "group"
	FairnessOff   = "off"
)

// maxHalfLife bounds userquota.fairness.halflife: a longer one is a typo
// (8760h is a year).
const maxHalfLife = 8760 * time.Hour

// maxFairnessWeight bounds a weight, so that a key (usage over weight)
// keeps its precision.
const maxFairnessWeight = 1e6

// Fairness is what a queue (or child template) sets of userquota.fairness*;
// a queue that sets nothing takes the nearest setting on the way to root
// (FairnessFor).
type Fairness struct {
	// Mode is FairnessUser, FairnessGroup, FairnessOff, or "" when the
	// queue does not set userquota.fairness.
	Mode string
	// HalfLife is userquota.fairness.halflife; 0 when not set (no decay:
	// only current usage counts).
	HalfLife time.Duration
	// Weights are userquota.fairness.weights by user or group name ("*"
	// included when given); nil when not set. A name not in it weighs
	// Weights["*"], else 1 (Weight).
	Weights map[string]float64
	// Base is what shares are measured against: the queue's resources.max
	// (its absolute, non-zero entries), else its resources.guaranteed.
	// Set when Mode is user or group.
	Base resources.Vector
}

// On reports whether f orders users or groups.
func (f *Fairness) On() bool {
	return f != nil && (f.Mode == FairnessUser || f.Mode == FairnessGroup)
}

// Weight is name's weight: its entry, else "*"'s, else 1.
func (f *Fairness) Weight(name string) float64 {
	if w, ok := f.Weights[name]; ok {
		return w
	}
	if w, ok := f.Weights["*"]; ok {
		return w
	}
	return 1
}

// FairnessFor returns the fairness in force for the leaf queue leaf (a
// full path) and the queue that sets it, whose usage is counted: the
// nearest setting of userquota.fairness on the way from leaf to root, as
// AppSortPolicy resolves application.sort.policy (a dynamic leaf takes the
// child template of its nearest configured ancestor that has one, and the
// leaf itself is then the queue measured). Nil when no queue on the way
// sets it, or the nearest sets off.
func FairnessFor(p *Partition, leaf string) (queue string, f *Fairness) {
	if p == nil {
		return "", nil
	}
	for path := leaf; path != ""; path = ParentPath(path) {
		if f := fairnessAt(p, path, leaf); f != nil && f.Mode != "" {
			if !f.On() {
				return "", nil
			}
			return path, f
		}
	}
	return "", nil
}

// fairnessAt is what the queue at path sets itself (nil: nothing).
func fairnessAt(p *Partition, path, leaf string) *Fairness {
	if q := p.Queue(path); q != nil {
		return &q.Fairness
	}
	if path != leaf {
		return nil
	}
	for a := ParentPath(path); a != ""; a = ParentPath(a) {
		if q := p.Queue(a); q != nil && q.ChildTemplate != nil {
			return &q.ChildTemplate.Fairness
		}
	}
	return nil
}

// checkFairness validates the userquota.fairness* properties of every
// queue and child template: a known mode, a half-life and weights only
// beside user or group, each well formed, and something to measure
// shares against.
func (v *validator) checkFairness(pb *partBuild) {
	for _, q := range pb.order {
		rq := pb.meta[q].raw
		if rq == nil {
			continue
		}
		v.checkFairnessProps(q.Path, rq.properties, rq.propertiesP, rq.max, rq.guaranteed)
		if rq.childTemplate != nil {
			v.checkFairnessProps(q.Path+" child template", rq.childTemplate.Properties,
				childPos(rq.childTemplateP, "properties", rq.childTemplateP.line), rq.templateRes[1], rq.templateRes[0])
		}
	}
}

func (v *validator) checkFairnessProps(where string, props map[string]string, p pos, max, guaranteed resSpec) {
	mode := ""
	if s, ok := props[PropFairness]; ok {
		m, err := parseFairnessMode(s)
		if err != "" {
			v.errs.at(childPos(p, PropFairness, p.line), "%s %q on %s: %s", PropFairness, shorten(s), where, err)
		}
		mode = m
	}
	on := mode == FairnessUser || mode == FairnessGroup
	for _, key := range []string{PropFairnessHalfLife, PropFairnessWeights} {
		s, ok := props[key]
		if !ok {
			continue
		}
		kp := childPos(p, key, p.line)
		if !on {
			if _, set := props[PropFairness]; !set || mode != "" {
				// (A mode that does not parse is reported already.)
				v.errs.at(kp, "%s on %s: set it beside %s: %s or %s on the same queue", key, where, PropFairness, FairnessUser, FairnessGroup)
			}
			continue
		}
		var err string
		if key == PropFairnessHalfLife {
			_, err = parseHalfLife(s)
		} else {
			_, err = parseFairnessWeights(s)
		}
		if err != "" {
			v.errs.at(kp, "%s %q on %s: %s", key, shorten(s), where, err)
		}
	}
	if on && fairnessBase(max, guaranteed) == nil {
		v.errs.at(childPos(p, PropFairness, p.line),
			"%s: %s on %s needs resources.max or resources.guaranteed with an amount above 0 to measure each %s's share against (percentages are not read here)",
			PropFairness, mode, where, mode)
	}
}

// parseFairnessMode reads userquota.fairness, ignoring case and spaces
// around it.
func parseFairnessMode(s string) (string, string) {
	switch m := strings.ToLower(strings.TrimSpace(s)); m {
	case FairnessUser, FairnessGroup, FairnessOff:
		return m, ""
	}
	return "", "give user, group or off"
}

// parseHalfLife reads userquota.fairness.halflife: a Go duration above 0
// and at most a year.
func parseHalfLife(s string) (time.Duration, string) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	switch {
	case err != nil:
		return 0, "give a duration with a unit, such as 24h or 90m"
	case d <= 0:
		return 0, "a half-life must be above 0 (leave the key out for no decay)"
	case d > maxHalfLife:
		return 0, "at most 8760h (a year)"
	}
	return d, ""
}

// parseFairnessWeights reads "alice=2,bob=0.5": names (a user's or a
// group's, or * for everyone else) each once, weights decimal numbers
// above 0 and at most a million.
func parseFairnessWeights(s string) (map[string]float64, string) {
	out := map[string]float64{}
	for _, part := range strings.Split(s, ",") {
		name, val, ok := strings.Cut(part, "=")
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		if !ok || name == "" || val == "" {
			return nil, "give name=weight pairs separated by commas, such as alice=2,bob=0.5"
		}
		if _, dup := out[name]; dup {
			return nil, strconv.Quote(name) + " is given twice"
		}
		w, err := strconv.ParseFloat(val, 64)
		switch {
		case err != nil || math.IsNaN(w) || math.IsInf(w, 0):
			return nil, "weight " + strconv.Quote(shorten(val)) + " of " + strconv.Quote(name) + " is not a number"
		case w <= 0:
			return nil, "weight " + strconv.Quote(val) + " of " + strconv.Quote(name) + " must be above 0"
		case w > maxFairnessWeight:
			return nil, "weight " + strconv.Quote(val) + " of " + strconv.Quote(name) + " is above 1000000"
		}
		out[name] = w
	}
	return out, ""
}

// fairnessBase is what shares are measured against: the absolute entries
// above 0 of max, else of guaranteed; nil when neither has one.
func fairnessBase(max, guaranteed resSpec) qtys {
	for _, spec := range []resSpec{max, guaranteed} {
		var out qtys
		for _, x := range spec.q {
			if x.v > 0 {
				out = append(out, x)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}

// fairness builds the settings of a validated queue or template.
func fairness(props map[string]string, max, guaranteed resSpec) Fairness {
	var out Fairness
	if s, ok := props[PropFairness]; ok {
		out.Mode, _ = parseFairnessMode(s)
	}
	if !out.On() {
		return Fairness{Mode: out.Mode}
	}
	if s, ok := props[PropFairnessHalfLife]; ok {
		out.HalfLife, _ = parseHalfLife(s)
	}
	if s, ok := props[PropFairnessWeights]; ok {
		out.Weights, _ = parseFairnessWeights(s)
	}
	base := fairnessBase(max, guaranteed)
	sort.Slice(base, func(i, j int) bool { return base[i].name < base[j].name })
	for _, x := range base {
		out.Base.Set(resources.Intern(x.name), x.v)
	}
	return out
}

// isFairnessProp reports whether key is one of ours for fair order.
func isFairnessProp(key string) bool {
	return key == PropFairness || key == PropFairnessHalfLife || key == PropFairnessWeights
}

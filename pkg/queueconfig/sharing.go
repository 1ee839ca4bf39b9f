package queueconfig

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/userquota/userquota/pkg/resources"
)

// Queue properties of elastic quotas (docs/elastic.md). YuniKorn keeps
// unknown properties as opaque strings, so these keys load in YuniKorn too.
const (
	// PropSharing turns runtime shares on for the queue's subtree; its only
	// value is SharingElastic.
	PropSharing    = "quota.sharing"
	SharingElastic = "elastic"
	// PropWeight is the sharing weight per resource: "cpu=4,memory=8Gi".
	PropWeight = "quota.weight"
	// PropLend is "true" (default) or "false": whether the unused part of
	// the queue's guaranteed share may be lent to other queues.
	PropLend = "quota.lend"
)

// PercentScale is the unit of Sharing's percentages: 25% is 25*PercentScale.
const PercentScale = 1000

// Sharing is a queue's elastic-quota settings. They are filled for every
// queue (the shares are computed and shown for the whole tree) and enforced
// only where Elastic is set.
type Sharing struct {
	// Elastic is true when the queue or an ancestor sets quota.sharing:
	// elastic: admission then checks the queue's runtime share.
	Elastic bool
	// GuaranteedPct and MaxPct are the guaranteed and max entries written
	// as percentages of the parent's (in 1/PercentScale of a percent).
	// Queue.Guaranteed and Queue.Max hold only the absolute entries.
	GuaranteedPct map[resources.ID]int64
	MaxPct        map[resources.ID]int64
	// Weight is quota.weight in base units; nil when not set.
	Weight map[resources.ID]int64
	// NoLend is quota.lend: false.
	NoLend bool
}

// pctQty is one resource amount written as a percentage.
type pctQty struct {
	name  string
	milli int64 // in 1/PercentScale of a percent
	raw   string
	p     pos
}

func (s resSpec) hasPct(name string) bool {
	for _, x := range s.pct {
		if x.name == name {
			return true
		}
	}
	return false
}

func isPercent(s string) bool { return strings.HasSuffix(strings.TrimSpace(s), "%") }

// percentRE: a plain decimal with at most three decimals, as in "25%" or
// "12.5%"; no units, exponents or signs.
var percentRE = regexp.MustCompile(`^[0-9]+(\.[0-9]{1,3})?$`)

// percent parses "25%" into 1/PercentScale of a percent.
func (w *walker) percent(s string, p pos) (int64, bool) {
	num := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "%"))
	if !percentRE.MatchString(num) || len(num) > 10 {
		w.errs.at(p, "invalid percentage %q: give a number above 0 and at most 100, such as 25%%", shorten(s))
		return 0, false
	}
	whole, frac, _ := strings.Cut(num, ".")
	frac += strings.Repeat("0", 3-len(frac))
	i, _ := strconv.ParseInt(whole, 10, 64)
	f, _ := strconv.ParseInt(frac, 10, 64)
	v := i*PercentScale + f
	if v <= 0 || v > 100*PercentScale {
		w.errs.at(p, "percentage %q out of range: give more than 0%% and at most 100%%", shorten(s))
		return 0, false
	}
	return v, true
}

// checkSharing validates the quota.* properties of every queue and child
// template and allows percentages only inside an elastic subtree, where the
// share computation resolves them. It runs in pb.order (parents first).
func (v *validator) checkSharing(pb *partBuild) {
	elastic := map[*Queue]bool{}
	for _, q := range pb.order {
		m := pb.meta[q]
		e := q.Parent != nil && elastic[q.Parent]
		rq := m.raw
		if rq == nil {
			elastic[q] = e
			continue
		}
		e = v.checkProps(rq.properties, rq.propertiesP, e)
		elastic[q] = e
		q.Sharing.Elastic = e
		v.checkPct(q.Path, rq.guaranteed, e)
		v.checkPct(q.Path, rq.max, e)
		if rq.childTemplate != nil {
			tp := childPos(rq.childTemplateP, "properties", rq.childTemplateP.line)
			te := v.checkProps(rq.childTemplate.Properties, tp, e)
			rq.childTemplate.Sharing.Elastic = te
			v.checkPct(q.Path+" child template", rq.templateRes[0], te)
			v.checkPct(q.Path+" child template", rq.templateRes[1], te)
		}
	}
}

// checkProps validates one properties map and returns whether the queue
// is elastic (inherited, or set here).
func (v *validator) checkProps(props map[string]string, p pos, inherited bool) bool {
	e := inherited
	if s, ok := props[PropSharing]; ok {
		if strings.ToLower(strings.TrimSpace(s)) != SharingElastic {
			v.errs.at(childPos(p, PropSharing, p.line), "%s %q: the only value is %q", PropSharing, shorten(s), SharingElastic)
		} else {
			e = true
		}
	}
	if s, ok := props[PropLend]; ok {
		if _, err := strconv.ParseBool(strings.TrimSpace(s)); err != nil {
			v.errs.at(childPos(p, PropLend, p.line), "%s %q: give true or false", PropLend, shorten(s))
		}
	}
	if s, ok := props[PropWeight]; ok {
		if _, err := parseWeight(s); err != "" {
			v.errs.at(childPos(p, PropWeight, p.line), "%s %q: %s", PropWeight, shorten(s), err)
		}
	}
	return e
}

func (v *validator) checkPct(path string, spec resSpec, elastic bool) {
	if elastic {
		return
	}
	for _, x := range spec.pct {
		v.errs.at(x.p, "percentage %s of %s needs %s: %s on the queue or an ancestor (percentages are resolved by the share computation)",
			x.raw, path, PropSharing, SharingElastic)
	}
}

// parseWeight reads "cpu=4,memory=8Gi" into base units by resource name;
// the error is "" or says what is wrong.
func parseWeight(s string) (map[string]int64, string) {
	out := map[string]int64{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, val, ok := strings.Cut(part, "=")
		k, val = strings.TrimSpace(k), strings.TrimSpace(val)
		if !ok || k == "" || val == "" {
			return nil, "give resource=quantity pairs separated by commas, such as cpu=4,memory=8Gi"
		}
		name := resources.CanonicalName(k)
		if _, dup := out[name]; dup {
			return nil, name + " is given twice"
		}
		x, err := resources.ParseQuantity(name, val)
		if err != nil {
			return nil, "invalid quantity " + strconv.Quote(val) + " for " + name
		}
		out[name] = x
	}
	if len(out) == 0 {
		return nil, "give resource=quantity pairs separated by commas, such as cpu=4,memory=8Gi"
	}
	return out, ""
}

// sharing builds the settings of a validated queue or template (interning
// resource names); elastic was set by checkSharing.
func sharing(elastic bool, props map[string]string, g, m resSpec) Sharing {
	s := Sharing{Elastic: elastic}
	for _, x := range g.pct {
		if s.GuaranteedPct == nil {
			s.GuaranteedPct = map[resources.ID]int64{}
		}
		s.GuaranteedPct[resources.Intern(x.name)] = x.milli
	}
	for _, x := range m.pct {
		if s.MaxPct == nil {
			s.MaxPct = map[resources.ID]int64{}
		}
		s.MaxPct[resources.Intern(x.name)] = x.milli
	}
	if w, ok := props[PropWeight]; ok {
		byName, _ := parseWeight(w)
		s.Weight = map[resources.ID]int64{}
		for name, x := range byName {
			s.Weight[resources.Intern(name)] = x
		}
	}
	if l, ok := props[PropLend]; ok {
		b, _ := strconv.ParseBool(strings.TrimSpace(l))
		s.NoLend = !b
	}
	return s
}

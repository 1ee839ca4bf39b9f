package queueconfig

import (
	"errors"
	"math"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/userquota/userquota/pkg/resources"
)

// qty is one resource amount of a config entry, in base units (cpu in
// millicores, memory in bytes), kept with the text it was written as so
// that messages show the operator's own numbers.
type qty struct {
	name string // Kubernetes name: vcore is written cpu
	v    int64
	raw  string
}

// qtys is a resource set sorted by name. Validation works on names, not on
// interned resources.IDs, so that an invalid config (or a fuzzer) does not
// add resource names to the process-wide registry.
type qtys []qty

func (q qtys) get(name string) (qty, bool) {
	for _, x := range q {
		if x.name == name {
			return x, true
		}
	}
	return qty{}, false
}

// allZero reports whether q names resources and all of them are 0.
func (q qtys) allZero() bool {
	if len(q) == 0 {
		return false
	}
	for _, x := range q {
		if x.v != 0 {
			return false
		}
	}
	return true
}

// isZero reports whether every amount is 0 (or there are none).
func (q qtys) isZero() bool {
	for _, x := range q {
		if x.v != 0 {
			return false
		}
	}
	return true
}

// above returns the first resource (by name) that both name and where q is
// larger than o: only resources named in both are compared, as YuniKorn's
// FitInMaxUndef does (a resource o does not name is not bounded by o).
func (q qtys) above(o qtys) (mine, theirs qty, bad bool) {
	for _, x := range q {
		if y, ok := o.get(x.name); ok && x.v > y.v {
			return x, y, true
		}
	}
	return qty{}, qty{}, false
}

// tightest merges two bounds: the smaller amount where both name a resource,
// the one given otherwise (YuniKorn's ComponentWiseMinPermissive).
func (q qtys) tightest(o qtys) qtys {
	out := append(qtys(nil), q...)
	for _, y := range o {
		found := false
		for i, x := range out {
			if x.name == y.name {
				found = true
				if y.v < x.v {
					out[i] = y
				}
				break
			}
		}
		if !found {
			out = append(out, y)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// plus adds two amounts per resource, saturating instead of overflowing (a
// saturated sum still compares as "too large").
func (q qtys) plus(o qtys) qtys {
	out := append(qtys(nil), q...)
	for _, y := range o {
		found := false
		for i, x := range out {
			if x.name == y.name {
				found = true
				s := x.v + y.v
				if y.v > 0 && x.v > math.MaxInt64-y.v {
					s = math.MaxInt64
				}
				out[i] = qty{name: x.name, v: s, raw: formatBase(x.name, s)}
				break
			}
		}
		if !found {
			out = append(out, y)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// String renders the set as "cpu=4,memory=10G" with the amounts as written.
func (q qtys) String() string {
	parts := make([]string, len(q))
	for i, x := range q {
		parts[i] = x.name + "=" + x.raw
	}
	return strings.Join(parts, ",")
}

// limit converts to a resources.Limit (interning the names). Called only
// for a config that passed validation.
func (q qtys) limit() resources.Limit {
	m := make(map[string]int64, len(q))
	for _, x := range q {
		m[x.name] = x.v
	}
	return resources.NewLimit(m)
}

// vector converts to a resources.Vector (interning the names).
func (q qtys) vector() resources.Vector {
	var v resources.Vector
	for _, x := range q {
		v.Set(resources.Intern(x.name), x.v)
	}
	return v
}

// formatBase renders a base-unit amount for messages (sums have no text of
// their own): cpu in cores or millicores, everything else as a number.
func formatBase(name string, v int64) string {
	if name == resources.CPU {
		if v%1000 == 0 {
			return itoa(v / 1000)
		}
		return itoa(v) + "m"
	}
	return itoa(v)
}

func itoa(v int64) string {
	if v == 0 {
		return "0"
	}
	neg := v < 0
	var b [24]byte
	i := len(b)
	u := uint64(v)
	if neg {
		u = uint64(-v)
	}
	for u > 0 {
		i--
		b[i] = byte('0' + u%10)
		u /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

// resSpec is a parsed resource mapping (resources.max, maxresources, ...).
type resSpec struct {
	given bool // the key holds a mapping, possibly empty
	ok    bool // every entry parsed
	q     qtys
	// pct are the entries written as percentages (resources.guaranteed and
	// resources.max only); they are not in q, so the absolute comparisons
	// of validation skip them and the share computation resolves them.
	pct []pctQty
	// raw is the mapping as written (key -> text), for YuniKorn's
	// deep-equality of partition and root limits.
	raw map[string]string
	p   pos
}

// resourceMap reads a mapping of resource names to Kubernetes quantities.
//
// Quantities are Kubernetes quantities on purpose, not YuniKorn's integer
// syntax: decimals such as 0.5 or 1.5Gi are accepted (and rounded up to a
// whole base unit, millicores for cpu), as are both "vcore" (YuniKorn's CPU)
// and "cpu". Negative values and values out of int64 range in base units
// are errors; so are percentages, except where pct is set (a queue's
// guaranteed and max, validated against quota.sharing later).
func (w *walker) resourceMap(n *yaml.Node, p pos, what string, pct bool) resSpec {
	spec := resSpec{p: p, ok: true}
	n, leave, ok := w.enter(n, p)
	if !ok {
		spec.ok = false
		return spec
	}
	defer leave()
	if isNull(n) {
		return spec
	}
	if n.Kind != yaml.MappingNode {
		w.errs.at(p, "expected a mapping of resource names to quantities (%s), got %s", what, describe(n))
		spec.ok = false
		return spec
	}
	spec.given = true
	spec.raw = map[string]string{}
	for _, e := range w.pairs(n, p) {
		ep := childPos(p, e.key, valueLine(e))
		if e.key == "" {
			w.errs.at(ep, "empty resource name")
			spec.ok = false
			continue
		}
		s, ok := w.str(e.val, ep)
		if !ok {
			spec.ok = false
			continue
		}
		spec.raw[e.key] = s
		name := resources.CanonicalName(e.key)
		if pct && isPercent(s) {
			m, ok := w.percent(s, ep)
			if !ok {
				spec.ok = false
				continue
			}
			if _, dup := spec.q.get(name); dup || spec.hasPct(name) {
				w.errs.at(ep, "%s is given twice (vcore is another name for cpu)", name)
				spec.ok = false
				continue
			}
			spec.pct = append(spec.pct, pctQty{name: name, milli: m, raw: s, p: ep})
			continue
		}
		v, ok := w.quantity(name, s, ep)
		if !ok {
			spec.ok = false
			continue
		}
		if _, dup := spec.q.get(name); dup || spec.hasPct(name) {
			w.errs.at(ep, "%s is given twice (vcore is another name for cpu)", name)
			spec.ok = false
			continue
		}
		spec.q = append(spec.q, qty{name: name, v: v, raw: s})
	}
	sort.Slice(spec.q, func(i, j int) bool { return spec.q[i].name < spec.q[j].name })
	sort.Slice(spec.pct, func(i, j int) bool { return spec.pct[i].name < spec.pct[j].name })
	return spec
}

// quantity parses one amount into base units.
func (w *walker) quantity(name, s string, p pos) (int64, bool) {
	if s == "" {
		w.errs.at(p, "missing quantity")
		return 0, false
	}
	if isPercent(s) {
		w.errs.at(p, "a percentage %q is not allowed here: only a queue's resources.guaranteed and resources.max take percentages (with quota.sharing: elastic); give an absolute quantity such as 4 or 16Gi", shorten(s))
		return 0, false
	}
	v, err := resources.ParseQuantity(name, s)
	switch {
	case err == nil:
		return v, true
	case errors.Is(err, resources.ErrNegative):
		w.errs.at(p, "negative quantity %q: a limit must be 0 or more", shorten(s))
	case errors.Is(err, resources.ErrOverflow):
		w.errs.at(p, "quantity %q is too large (out of range in base units)", shorten(s))
	default:
		w.errs.at(p, "invalid quantity %q", shorten(s))
	}
	return 0, false
}

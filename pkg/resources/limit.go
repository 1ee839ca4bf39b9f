package resources

import (
	"encoding/json"
	"math"
	"sort"
	"strings"
)

// Bound is the maximum of one resource.
type Bound struct {
	ID  ID
	Max int64
}

// Limit is a set of per-resource maxima. It constrains only the resources it
// names: a resource it does not name is unlimited, one it names with 0 is
// blocked. Bounds are ordered by resource name, so the first violation found
// is the first by name. A nil Limit constrains nothing.
type Limit []Bound

// NewLimit builds a limit from base-unit maxima keyed by resource name.
func NewLimit(m map[string]int64) Limit {
	l := make(Limit, 0, len(m))
	for name, x := range m {
		l = append(l, Bound{ID: Intern(name), Max: x})
	}
	sort.Slice(l, func(i, j int) bool { return l[i].ID.Name() < l[j].ID.Name() })
	return l
}

// ParseLimit builds a limit from Kubernetes quantity strings.
func ParseLimit(m map[string]string) (Limit, error) {
	l := make(Limit, 0, len(m))
	var errs []string
	for name, s := range m {
		x, err := ParseQuantity(name, s)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		l = append(l, Bound{ID: Intern(name), Max: x})
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		return nil, &multiError{errs}
	}
	sort.Slice(l, func(i, j int) bool { return l[i].ID.Name() < l[j].ID.Name() })
	for i := 1; i < len(l); i++ {
		if l[i].ID == l[i-1].ID {
			return nil, &multiError{[]string{l[i].ID.Name() + ": given twice (vcore is an alias of cpu)"}}
		}
	}
	return l, nil
}

type multiError struct{ errs []string }

func (e *multiError) Error() string { return strings.Join(e.errs, "; ") }

// Get returns the maximum for id and whether the limit names it.
func (l Limit) Get(id ID) (int64, bool) {
	for _, b := range l {
		if b.ID == id {
			return b.Max, true
		}
	}
	return 0, false
}

// Excess is what a request would take over a limit: the resource (the
// first by name that does not fit) with the usage, the request and the
// maximum, in base units. A refusal is built from it without going back to
// the limit or the vectors.
type Excess struct {
	ID      ID
	Usage   int64
	Request int64
	Max     int64
}

// Exceeds reports the first resource (by name) for which adding req to usage
// would go over the limit, with its numbers. Only resources the request asks
// for are checked: usage already above a limit (after a config change) does
// not block a request that does not add to it. It allocates nothing.
func (l Limit) Exceeds(usage, req Vector) (Excess, bool) {
	for _, b := range l {
		r := req.Get(b.ID)
		if r <= 0 {
			continue
		}
		// b.Max - u cannot overflow: both are non-negative.
		if u := usage.Get(b.ID); r > b.Max-u {
			return Excess{ID: b.ID, Usage: u, Request: r, Max: b.Max}, true
		}
	}
	return Excess{}, false
}

// ExceedsWith is Exceeds for a usage of usage plus held minus own (room
// held for requests not committed yet, less what the asker itself holds),
// clamped at zero; the Excess reports that combined usage. It allocates
// nothing.
func (l Limit) ExceedsWith(usage, held, own, req Vector) (Excess, bool) {
	if held == nil {
		// Nothing held: own (part of held) adds nothing either.
		return l.Exceeds(usage, req)
	}
	for _, b := range l {
		r := req.Get(b.ID)
		if r <= 0 {
			continue
		}
		u := usage.Get(b.ID)
		if h := held.Get(b.ID) - own.Get(b.ID); h > 0 {
			if u > math.MaxInt64-h {
				u = math.MaxInt64
			} else {
				u += h
			}
		}
		if r > b.Max-u {
			return Excess{ID: b.ID, Usage: u, Request: r, Max: b.Max}, true
		}
	}
	return Excess{}, false
}

// AllZero reports whether the limit names resources and all of them are 0.
func (l Limit) AllZero() bool {
	if len(l) == 0 {
		return false
	}
	for _, b := range l {
		if b.Max != 0 {
			return false
		}
	}
	return true
}

// Within reports whether every resource o names is also named by l with a
// maximum no larger, i.e. l is at least as tight as o everywhere o applies.
// It returns the first resource where l is looser.
func (l Limit) Within(o Limit) (ID, bool) {
	for _, ob := range o {
		lm, ok := l.Get(ob.ID)
		if ok && lm > ob.Max {
			return ob.ID, false
		}
	}
	return 0, true
}

// Vector returns the maxima as a vector (unnamed resources read as 0).
func (l Limit) Vector() Vector {
	var v Vector
	for _, b := range l {
		v.Set(b.ID, b.Max)
	}
	return v
}

// Map returns the maxima keyed by resource name, zeros included.
func (l Limit) Map() map[string]int64 {
	m := make(map[string]int64, len(l))
	for _, b := range l {
		m[b.ID.Name()] = b.Max
	}
	return m
}

// String renders the limit as "cpu=5,memory=10Gi".
func (l Limit) String() string {
	var b strings.Builder
	for i, x := range l {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(x.ID.Name())
		b.WriteByte('=')
		b.WriteString(FormatValue(x.ID, x.Max))
	}
	return b.String()
}

// MarshalJSON renders the limit as an object keyed by name, zeros included
// (a zero bound blocks its resource, so it must be shown).
func (l Limit) MarshalJSON() ([]byte, error) {
	return json.Marshal(l.Map())
}

// UnmarshalJSON reads the form MarshalJSON writes.
func (l *Limit) UnmarshalJSON(data []byte) error {
	var m map[string]int64
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	*l = NewLimit(m)
	return nil
}

// Percent is usage as a share of limit, floored, so that 100 means at the
// limit. A limit of 0 blocks its resource: it reads as full (100), or over
// when something is used anyway. The usage page and `userquotactl usage`
// both show it.
func Percent(usage, limit int64) int {
	if limit <= 0 {
		if usage > 0 {
			return math.MaxInt32
		}
		return 100
	}
	p := math.Floor(float64(usage) * 100 / float64(limit))
	if p > math.MaxInt32 {
		return math.MaxInt32
	}
	return int(p)
}

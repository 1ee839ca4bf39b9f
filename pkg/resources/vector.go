package resources

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Vector is an amount of every resource, in base units, indexed by ID.
// Entries past the end of the slice are zero, so vectors built before a new
// resource name was interned stay valid. The zero value is the empty vector.
//
// Vector methods that mutate take a pointer and either succeed completely or
// change nothing.
type Vector []int64

// Get returns the amount of id (zero when absent).
func (v Vector) Get(id ID) int64 {
	if int(id) < len(v) {
		return v[id]
	}
	return 0
}

// Set sets the amount of id, growing v if needed.
func (v *Vector) Set(id ID, value int64) {
	v.grow(int(id) + 1)
	(*v)[id] = value
}

func (v *Vector) grow(n int) {
	if len(*v) >= n {
		return
	}
	if cap(*v) >= n {
		*v = (*v)[:n]
		return
	}
	nv := make(Vector, n)
	copy(nv, *v)
	*v = nv
}

// IsZero reports whether every amount is zero.
func (v Vector) IsZero() bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

// Clone returns a copy that shares nothing with v.
func (v Vector) Clone() Vector {
	if v == nil {
		return nil
	}
	return append(Vector(nil), v...)
}

// Equal reports whether v and o hold the same amounts (trailing zeros ignored).
func (v Vector) Equal(o Vector) bool {
	n := max(len(v), len(o))
	for i := 0; i < n; i++ {
		if v.Get(ID(i)) != o.Get(ID(i)) {
			return false
		}
	}
	return true
}

// Add adds o to v. On overflow it returns ErrOverflow and v is unchanged.
func (v *Vector) Add(o Vector) error {
	for i, x := range o {
		if x > 0 && v.Get(ID(i)) > maxInt64-x || x < 0 && v.Get(ID(i)) < minInt64-x {
			return fmt.Errorf("%s: %d + %d: %w", ID(i).Name(), v.Get(ID(i)), x, ErrOverflow)
		}
	}
	v.grow(len(o))
	for i, x := range o {
		(*v)[i] += x
	}
	return nil
}

// Sub subtracts o from v. A result below zero returns ErrNegative and leaves
// v unchanged: usage can never be negative, so this always means a caller
// released something it did not hold.
func (v *Vector) Sub(o Vector) error {
	for i, x := range o {
		if v.Get(ID(i))-x < 0 {
			return fmt.Errorf("%s: %d - %d: %w", ID(i).Name(), v.Get(ID(i)), x, ErrNegative)
		}
	}
	for i, x := range o {
		if x != 0 {
			(*v)[i] -= x
		}
	}
	return nil
}

// SubClamped subtracts o from v, stopping every amount at zero. It is for
// releases, which are never refused; it reports whether clamping happened.
func (v *Vector) SubClamped(o Vector) (clamped bool) {
	// w, not *v, in the loop: a store through *v may alias its own slice
	// header (a tracker node holds both), so the compiler would load the
	// header again for every amount.
	w := *v
	for i, x := range o {
		if x == 0 {
			continue
		}
		var cur int64
		if i < len(w) {
			cur = w[i]
		}
		if cur < x {
			clamped = true
			x = cur
		}
		if x != 0 {
			w[i] -= x
		}
	}
	return clamped
}

const (
	maxInt64 = int64(^uint64(0) >> 1)
	minInt64 = -maxInt64 - 1
)

// ids returns the IDs of the non-zero entries, ordered by name.
func (v Vector) ids() []ID {
	ids := make([]ID, 0, len(v))
	for i, x := range v {
		if x != 0 {
			ids = append(ids, ID(i))
		}
	}
	sortIDsByName(ids)
	return ids
}

// Map returns the non-zero amounts by resource name.
func (v Vector) Map() map[string]int64 {
	m := make(map[string]int64, len(v))
	for i, x := range v {
		if x != 0 {
			m[ID(i).Name()] = x
		}
	}
	return m
}

// String renders v as "cpu=4500m,memory=1Gi,pods=3", ordered by name.
func (v Vector) String() string {
	var b strings.Builder
	for i, id := range v.ids() {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(id.Name())
		b.WriteByte('=')
		b.WriteString(FormatValue(id, v[id]))
	}
	return b.String()
}

// MarshalJSON renders v as an object of base-unit integers keyed by name,
// keys sorted, zero entries omitted.
func (v Vector) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, id := range v.ids() {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(id.Name())
		b.Write(name)
		b.WriteByte(':')
		b.WriteString(strconv.FormatInt(v[id], 10))
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads the form MarshalJSON writes.
func (v *Vector) UnmarshalJSON(data []byte) error {
	var m map[string]int64
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	*v = FromMap(m)
	return nil
}

// FromMap builds a vector from base-unit amounts keyed by name.
func FromMap(m map[string]int64) Vector {
	var v Vector
	for name, x := range m {
		v.Set(Intern(name), x)
	}
	return v
}

// Parse builds a vector from Kubernetes quantity strings keyed by resource
// name ("vcore" is an alias of "cpu"). Every invalid entry is reported,
// ordered by name.
func Parse(m map[string]string) (Vector, error) {
	var v Vector
	var errs []string
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		x, err := ParseQuantity(name, m[name])
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		v.Set(Intern(name), x)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return v, nil
}

// FromResourceList converts a Kubernetes resource list to base units.
func FromResourceList(rl corev1.ResourceList) (Vector, error) {
	return FromResourceListWith(rl, -1, 0)
}

// FromResourceListWith is FromResourceList with id set to x, whatever rl
// says of it (id -1: none), in one allocation where setting each entry in
// turn grows the vector two or three times: a pod's charge is its
// requests and one pod, made for every pod a restart finds.
func FromResourceListWith(rl corev1.ResourceList, id ID, x int64) (Vector, error) {
	var ids [8]ID
	var xs [8]int64
	n, top := 0, int(id)
	for name, q := range rl {
		v, err := BaseUnits(string(name), q)
		if err != nil {
			return nil, fmt.Errorf("%s: quantity %s: %w", name, Describe(q), err)
		}
		i := Intern(string(name))
		if n == len(ids) {
			// More than a pod usually asks for: set in turn.
			return fromResourceListSlow(rl, id, x)
		}
		ids[n], xs[n] = i, v
		n++
		top = max(top, int(i))
	}
	if top < 0 {
		return nil, nil
	}
	v := make(Vector, top+1)
	for j := range n {
		v[ids[j]] = xs[j]
	}
	if id >= 0 {
		v[id] = x
	}
	return v, nil
}

// fromResourceListSlow is FromResourceListWith setting each entry in turn.
func fromResourceListSlow(rl corev1.ResourceList, id ID, x int64) (Vector, error) {
	var v Vector
	for name, q := range rl {
		u, err := BaseUnits(string(name), q)
		if err != nil {
			return nil, fmt.Errorf("%s: quantity %s: %w", name, Describe(q), err)
		}
		v.Set(Intern(string(name)), u)
	}
	if id >= 0 {
		v.Set(id, x)
	}
	return v, nil
}

// CanAdd reports whether Add(o) would succeed.
func (v Vector) CanAdd(o Vector) bool {
	for i, x := range o {
		if x > 0 && v.Get(ID(i)) > maxInt64-x || x < 0 && v.Get(ID(i)) < minInt64-x {
			return false
		}
	}
	return true
}

// AddUnchecked adds o to v without the overflow check, for callers that
// checked CanAdd on a vector that bounds v (a usage root bounds its subtree).
func (v *Vector) AddUnchecked(o Vector) {
	v.grow(len(o))
	w := (*v)[:len(o)] // as in SubClamped; and no bounds check in the loop
	for i, x := range o {
		w[i] += x
	}
}

// Times returns v scaled by n (n >= 0); ErrOverflow when an amount does
// not fit in int64.
func (v Vector) Times(n int64) (Vector, error) {
	if n < 0 {
		return nil, fmt.Errorf("times %d: %w", n, ErrNegative)
	}
	out := make(Vector, len(v))
	for i, x := range v {
		if x > 0 && n > maxInt64/x || x < 0 && n > minInt64/x {
			return nil, fmt.Errorf("%s: %d x %d: %w", ID(i).Name(), x, n, ErrOverflow)
		}
		out[i] = x * n
	}
	return out, nil
}

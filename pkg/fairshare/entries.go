package fairshare

import "time"

// entries holds the histories by user and by group, each name's queues
// together in one slice: a charge finds its user's (and its group's)
// histories with one map lookup each, and its queues among them by a
// short scan or, for a name with many, the name's index. Keyed by Key, a
// charge took a lookup per queue and name, each cold among tens of
// thousands of histories (BenchmarkChargeRelease*).
//
// A *entry it returns points into a name's slice: good until the next
// add or remove on that name.
type entries struct {
	users, groups map[string]*named
	n             int // histories held
}

// named is one user's or group's histories, one per queue on its pods'
// paths: a user's typically a leaf's two or three queues below root,
// found by a scan; a group's may span many queues, found by index.
type named struct {
	queues []queued
	// index is queues' positions by queue once there are more than
	// scanUpTo; nil before.
	index map[string]int
}

// scanUpTo is how many histories a name's find scans before it keeps an
// index: a scan of a few strings costs less than a map lookup, a group
// spread over hundreds of queues would scan them all.
const scanUpTo = 8

type queued struct {
	queue string
	e     entry
}

func newEntries() entries {
	return entries{users: map[string]*named{}, groups: map[string]*named{}}
}

func (s *entries) names(group bool) map[string]*named {
	if group {
		return s.groups
	}
	return s.users
}

// of returns name's histories (nil: none).
func (s *entries) of(group bool, name string) *named { return s.names(group)[name] }

// ofNew returns name's histories, made with room for queues histories
// when it has none.
func (s *entries) ofNew(group bool, name string, queues int) *named {
	m := s.names(group)
	n := m[name]
	if n == nil {
		n = &named{queues: make([]queued, 0, queues)}
		m[name] = n
	}
	return n
}

// find returns the index of queue's history in n, -1 for none. Queue
// paths are the config's own strings (chain), so most compare by
// pointer.
func (n *named) find(queue string) int {
	if n.index != nil {
		if i, ok := n.index[queue]; ok {
			return i
		}
		return -1
	}
	for i := range n.queues {
		if n.queues[i].queue == queue {
			return i
		}
	}
	return -1
}

// add adds an empty history of queue as of at to n (which has none) and
// returns its index.
func (s *entries) add(n *named, queue string, at time.Time) int {
	n.queues = append(n.queues, queued{queue: queue, e: entry{at: at}})
	s.n++
	i := len(n.queues) - 1
	switch {
	case n.index != nil:
		n.index[queue] = i
	case len(n.queues) > scanUpTo:
		n.index = make(map[string]int, len(n.queues))
		for j := range n.queues {
			n.index[n.queues[j].queue] = j
		}
	}
	return i
}

// removeAt removes n's i-th history; the last one takes index i. n
// stays name's until forget.
func (s *entries) removeAt(n *named, i int) {
	last := len(n.queues) - 1
	if n.index != nil {
		delete(n.index, n.queues[i].queue)
		if i < last {
			n.index[n.queues[last].queue] = i
		}
	}
	n.queues[i] = n.queues[last]
	n.queues[last] = queued{}
	n.queues = n.queues[:last]
	s.n--
}

// forget drops name's n when it has no history left.
func (s *entries) forget(group bool, name string, n *named) {
	if len(n.queues) == 0 {
		delete(s.names(group), name)
	}
}

// get returns k's history (nil: none).
func (s *entries) get(k Key) *entry {
	n := s.of(k.Group, k.Name)
	if n == nil {
		return nil
	}
	if i := n.find(k.Queue); i >= 0 {
		return &n.queues[i].e
	}
	return nil
}

// getNew returns k's history, added empty when it has none.
func (s *entries) getNew(k Key) *entry {
	n := s.ofNew(k.Group, k.Name, 1)
	i := n.find(k.Queue)
	if i < 0 {
		i = s.add(n, k.Queue, time.Time{})
	}
	return &n.queues[i].e
}

// each calls fn with every history; where fn returns true the history
// is removed.
func (s *entries) each(fn func(k Key, e *entry) (remove bool)) {
	for _, group := range [2]bool{false, true} {
		for name, n := range s.names(group) {
			for i := 0; i < len(n.queues); {
				q := &n.queues[i]
				if fn(Key{Queue: q.queue, Group: group, Name: name}, &q.e) {
					s.removeAt(n, i)
					continue
				}
				i++
			}
			s.forget(group, name, n)
		}
	}
}

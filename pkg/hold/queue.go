package hold

// Queue returns the held pods placed in the leaf queue queue, in let-in
// order: the order in which a let-in of every held pod (All) would try
// them, restricted to the queue. A pod's position in it is its place in
// its queue's line. It walks every held pod (the book has no index by
// leaf queue: the scheduling path needs none), so it is for an occasional
// reader, such as the REST API, not for the scheduling path.
func (b *Book) Queue(queue string, order Order) []*Pod {
	b.sync()
	var out []*Pod
	for _, p := range b.pods {
		if p.Request != nil && p.Request.Queue == queue {
			out = append(out, p)
		}
	}
	sortForLetIn(out, order)
	return out
}

// Ahead returns the pods held by the same limit as the held pod key that
// a let-in on that limit tries before it, in that order (Blocked's, up to
// Window pods); nil when key is not held or nothing is ahead of it.
func (b *Book) Ahead(key string, order Order) []*Pod {
	p := b.pods[key]
	if p == nil {
		return nil
	}
	all := b.Blocked(p, Window, order)
	for i, q := range all {
		if q.Key == key {
			return all[:i:i]
		}
	}
	return all
}

// QueueCounts returns how many pods are held in each leaf queue (pods
// that could not be placed are in none). It walks every held pod.
func (b *Book) QueueCounts() map[string]int {
	out := map[string]int{}
	for _, p := range b.pods {
		if p.Request != nil {
			out[p.Request.Queue]++
		}
	}
	return out
}

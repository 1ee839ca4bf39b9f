package userquota

// readAhead hands each of objs, in order, to handle with what prepare read
// of it. prepare runs in a goroutine of its own, at most readAheadDepth
// batches ahead of handle: the initial list's pass reads each pod's user,
// queue and resources on one core while the other charges the pods read
// before it (docs/throughput.md, "Recovery"), and the start-up let-in
// reads the waiting pods' requests while it books the ones read before.
// prepare must not depend on what handle changes, or must record that it
// looked (preparedPod).
func readAhead[O, P any](objs []O, prepare func(obj O, into *P), handle func(obj O, p *P)) {
	if len(objs) < 2*readAheadBatch {
		// Too few to be worth a goroutine.
		for _, o := range objs {
			var p P
			prepare(o, &p)
			handle(o, &p)
		}
		return
	}
	free := make(chan []P, readAheadDepth)
	ready := make(chan []P, readAheadDepth)
	for range readAheadDepth {
		free <- make([]P, readAheadBatch)
	}
	go func() {
		defer close(ready)
		for start := 0; start < len(objs); start += readAheadBatch {
			batch := (<-free)[:min(readAheadBatch, len(objs)-start)]
			for i := range batch {
				var zero P
				batch[i] = zero
				prepare(objs[start+i], &batch[i])
			}
			ready <- batch
		}
	}()
	next := 0
	for batch := range ready {
		for i := range batch {
			handle(objs[next], &batch[i])
			next++
		}
		free <- batch[:cap(batch)]
	}
}

// readAhead's batches: big enough that the hand-over between the two
// goroutines costs nothing per pod, few enough that the prepared ones stay
// in cache.
const (
	readAheadBatch = 128
	readAheadDepth = 4
)

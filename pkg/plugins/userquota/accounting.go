package userquota

import (
	"context"
	"sync"

	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/userquota/userquota/pkg/accounting"
	"github.com/userquota/userquota/pkg/cmshard"
	"github.com/userquota/userquota/pkg/metrics"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

// The books of resource-seconds (docs/accounting.md). Every replica keeps
// them from the charges and releases its own ledger makes (the ledger's
// observer) and the share tables it puts in force (the recompute's hook),
// so a follower's books are as current as the leader's. The leader writes
// them to ConfigMaps (shardstore.go); every replica restores them at
// start-up, before it charges the running pods, and settles them once
// they are charged. A goroutine takes the checkpoints and snapshots on
// time; /metrics and the REST API read the books.

// The books' ConfigMaps, in the queue config's namespace:
// userquota-accounting-0 .. -63.
const (
	accountingComponent = "accounting-books"
	accountingKey       = "books.jsonl"
)

var accountingKind = shardKind{
	prefix: "userquota-accounting-", key: accountingKey, component: accountingComponent,
	annotation: "userquota.io/accounting-shards", max: 64,
	what: "the books of resource-seconds",
}

// newAccounting wires the books: the ledger tells them every charge and
// release, the share recompute every share table it puts in force.
func (pl *Plugin) newAccounting(c clock.PassiveClock) {
	pl.books = accounting.New(c, accounting.Options{Users: pl.args.PerUserAccounting})
	pl.ledger.Observe(pl.books)
	pl.elastic.sharesSet = pl.books.SetGuaranteed
}

// guaranteedOf is the guaranteed share in force of each elastic queue.
func guaranteedOf(queues map[string]ugm.ElasticQueue) map[string]resources.Vector {
	if len(queues) == 0 {
		return nil
	}
	out := make(map[string]resources.Vector, len(queues))
	for path, q := range queues {
		out[path] = q.Share.Guaranteed
	}
	return out
}

// newAccountingStore is the store of the books' ConfigMaps.
func newAccountingStore(client kubernetes.Interface, namespace string, b *accounting.Books, leading func() bool) *shardStore {
	return &shardStore{client: client, namespace: namespace, kind: accountingKind, state: &booksState{books: b, max: accountingKind.max, target: cmshard.TargetShardBytes, limit: cmshard.MaxShardBytes}, leading: leading}
}

// startAccounting restores the books written by the last leader (before
// the pod handler charges the running pods); a failed restore is retried
// by runAccounting, and nothing is written until it succeeds.
func (pl *Plugin) startAccounting(ctx context.Context, leading func() bool) error {
	client, err := pl.stateClient("userquota-accounting")
	if err != nil {
		return err
	}
	pl.booksStore = newAccountingStore(client, pl.args.ConfigMapNamespace, pl.books, leading)
	pl.booksStore.restoreAtStart(ctx)
	return nil
}

// runAccounting shows the books on /metrics, takes their checkpoints and
// snapshots on time and keeps them in ConfigMaps while this replica
// leads, until ctx ends.
func (pl *Plugin) runAccounting(ctx context.Context, c clock.Clock) {
	unset := metrics.SetAccounting(pl.books)
	defer unset()
	go pl.booksStore.run(ctx, pl.podsSynced, pl.books.Settle)
	for {
		wait := pl.books.NextTick().Sub(c.Now())
		select {
		case <-ctx.Done():
			return
		case <-c.After(max(wait, 0)):
		}
		pl.books.Tick()
	}
}

// booksState is the books as a shardStore keeps them: the days' shards
// first (rewritten about once a day), then the tail's (every checkpoint),
// at most max in all; when they do not fit, the oldest daily snapshots are
// left out of what is written.
type booksState struct {
	books *accounting.Books
	// max shards, planned at target bytes, each at most limit bytes.
	max, target, limit int

	mu sync.Mutex
	// What was encoded last, for the versions it was encoded at.
	keep                     int
	tailVersion, daysVersion uint64
	tail, days               [][]byte
}

// shards encodes the books' records, or returns what it encoded last
// when their versions have not changed since (most writes: a checkpoint
// is taken every 5 minutes), without asking the books for the records.
func (s *booksState) shards() ([][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tail != nil {
		if tv, dv := s.books.Versions(); tv == s.tailVersion && dv == s.daysVersion {
			return s.encoded(), nil
		}
	}
	for keep := -1; ; {
		tail, days, tv, dv := s.books.Records(keep)
		if tail == nil {
			return nil, nil
		}
		var err error
		if s.tail == nil || tv != s.tailVersion || keep != s.keep {
			if s.tail, err = accounting.Shards(tail, s.target, s.limit); err != nil {
				s.tail = nil
				return nil, err
			}
		}
		if s.days == nil || dv != s.daysVersion || keep != s.keep {
			if s.days, err = accounting.Shards(days, s.target, s.limit); err != nil {
				s.days = nil
				return nil, err
			}
		}
		s.keep, s.tailVersion, s.daysVersion = keep, tv, dv
		if len(s.days)+len(s.tail) <= s.max || keep == 0 {
			return s.encoded(), nil
		}
		// One daily snapshot fewer than are in these records.
		n := 0
		for _, r := range tail {
			if r.Kind == "grid" {
				n = len(r.Grid)
			}
		}
		keep = max(0, n-1)
	}
}

// encoded is the shards encoded last: the days' first, then the tail's.
func (s *booksState) encoded() [][]byte {
	return append(append([][]byte(nil), s.days...), s.tail...)
}

func (s *booksState) restore(data [][]byte) (records, bad int) {
	var recs []accounting.Record
	for _, d := range data {
		r, b := accounting.Decode(d)
		recs, bad = append(recs, r...), bad+b
	}
	s.books.Restore(recs)
	return len(recs), bad
}

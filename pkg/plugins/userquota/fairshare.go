package userquota

import (
	"context"

	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/userquota/userquota/pkg/fairshare"
)

// Fair let-in order among users and groups (docs/fairness.md). Every
// replica keeps the usage history from the charges and releases its own
// ledger makes (the ledger's observer), so a follower's history is as
// current as the leader's; the hold book orders the held pods of fair
// queues by it. The leader writes the history to ConfigMaps every
// shardStoreEvery (shardstore.go); every replica restores it at start-up,
// before it charges the running pods, and settles it once they are
// charged.

// The history's ConfigMaps, in the queue config's namespace:
// userquota-fairshare-0 .. -63.
const (
	fairShareComponent = "fairshare-history"
	fairShareKey       = "history.jsonl"
)

var fairShareKind = shardKind{
	prefix: "userquota-fairshare-", key: fairShareKey, component: fairShareComponent,
	annotation: "userquota.io/fairshare-shards", max: 64,
	what: "the usage history of fair order",
}

// newFairShare wires the usage history: the ledger tells it every charge
// and release, the hold book orders fair queues by it.
func (pl *Plugin) newFairShare(c clock.PassiveClock) {
	pl.fair = fairshare.New(c, pl.partition)
	pl.ledger.Observe(pl.fair)
	pl.held.book.SetFair(pl.fair)
}

// newFairShareStore is the store of history's ConfigMaps.
func newFairShareStore(client kubernetes.Interface, namespace string, h *fairshare.History, leading func() bool) *shardStore {
	return &shardStore{client: client, namespace: namespace, kind: fairShareKind, state: fairShareState{h}, leading: leading}
}

// startFairShare restores the history written by the last leader (before
// the pod handler charges the running pods). A failed restore is retried
// by runFairShare; until it succeeds nothing is written, so that a
// replica that could not read the history never overwrites it.
func (pl *Plugin) startFairShare(ctx context.Context, leading func() bool) error {
	client, err := pl.stateClient("userquota-fairshare")
	if err != nil {
		return err
	}
	pl.fairStore = newFairShareStore(client, pl.args.ConfigMapNamespace, pl.fair, leading)
	pl.fairStore.restoreAtStart(ctx)
	return nil
}

// runFairShare settles the history once the running pods are charged and
// writes it every shardStoreEvery while this replica leads.
func (pl *Plugin) runFairShare(ctx context.Context) {
	pl.fairStore.run(ctx, pl.podsSynced, pl.fair.Settle)
}

// fairShareState is the history as a shardStore keeps it.
type fairShareState struct{ h *fairshare.History }

func (s fairShareState) shards() ([][]byte, error) {
	recs := s.h.Records()
	if len(recs) == 0 {
		return nil, nil
	}
	return fairshare.Shards(recs, fairshare.TargetShardBytes, fairshare.MaxShardBytes)
}

func (s fairShareState) restore(data [][]byte) (records, bad int) {
	var recs []fairshare.Record
	for _, d := range data {
		r, b := fairshare.Decode(d)
		recs, bad = append(recs, r...), bad+b
	}
	s.h.Restore(recs)
	return len(recs), bad
}

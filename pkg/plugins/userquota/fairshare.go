package userquota

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/userquota/userquota/pkg/fairshare"
)

// Fair let-in order among users and groups (docs/fairness.md). Every
// replica keeps the usage history from the charges and releases its own
// ledger makes (the ledger's observer), so a follower's history is as
// current as the leader's; the hold book orders the held pods of fair
// queues by it. The leader writes the history to ConfigMaps every
// fairShareEvery; every replica restores it at start-up, before it
// charges the running pods, and settles it once they are charged.

// fairShareEvery is how often the leader writes the usage history: the
// error a restart brings grows with it (docs/fairness.md).
const fairShareEvery = 30 * time.Second

// Names and labels of the history's ConfigMaps, in the queue config's
// namespace: userquota-fairshare-0 .. -63. RBAC allows update and delete
// of these names only.
const (
	fairShareName      = "userquota-fairshare-"
	fairShareMaxShards = 64
	fairShareKey       = "history.jsonl"
	fairShareComponent = "fairshare-history"
	labelComponent     = "app.kubernetes.io/component"
	labelPartOf        = "app.kubernetes.io/part-of"
	annotationShards   = "userquota.io/fairshare-shards"
)

// newFairShare wires the usage history: the ledger tells it every charge
// and release, the hold book orders fair queues by it.
func (pl *Plugin) newFairShare(c clock.PassiveClock) {
	pl.fair = fairshare.New(c, pl.partition)
	pl.ledger.Observe(pl.fair)
	pl.held.book.SetFair(pl.fair)
}

// startFairShare restores the history written by the last leader (before
// the pod handler charges the running pods). A failed restore is retried
// by runFairShare; until it succeeds nothing is written, so that a
// replica that could not read the history never overwrites it.
func (pl *Plugin) startFairShare(ctx context.Context, leading func() bool) error {
	client := pl.handle.ClientSet()
	if cfg := pl.handle.KubeConfig(); cfg != nil {
		cfg = restclient.CopyConfig(cfg)
		cfg.QPS, cfg.Burst = 5, 10
		var err error
		if client, err = kubernetes.NewForConfig(restclient.AddUserAgent(cfg, "userquota-fairshare")); err != nil {
			return fmt.Errorf("fair share client: %w", err)
		}
	}
	pl.fairStore = &fairShareStore{client: client, namespace: pl.args.ConfigMapNamespace, history: pl.fair, leading: leading}
	restoreCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_ = pl.fairStore.restore(restoreCtx, klog.FromContext(ctx).WithName(Name))
	return nil
}

// runFairShare settles the history once the running pods are charged and
// writes it every fairShareEvery while this replica leads.
func (pl *Plugin) runFairShare(ctx context.Context) {
	st, logger := pl.fairStore, klog.FromContext(ctx).WithName(Name)
	if !st.isRestored() {
		_ = wait.PollUntilContextCancel(ctx, fairShareEvery, false, func(ctx context.Context) (bool, error) {
			return st.restore(ctx, logger) == nil, nil
		})
	}
	// The running pods are charged once the pod handler saw them all:
	// from then on they stand for what ran, not the records.
	if !cache.WaitForCacheSync(ctx.Done(), pl.podsSynced) {
		return
	}
	pl.fair.Settle()
	wait.UntilWithContext(ctx, func(ctx context.Context) { st.write(ctx, logger) }, fairShareEvery)
}

// fairShareStore reads and writes the history's ConfigMaps.
type fairShareStore struct {
	client    kubernetes.Interface
	namespace string
	history   *fairshare.History
	leading   func() bool

	mu       sync.Mutex
	restored bool
	led      bool
	// written is each shard's data as last written or read (name ->
	// data): an unchanged shard is not written again.
	written map[string][]byte
}

func (s *fairShareStore) isRestored() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restored
}

// restore lists the history's ConfigMaps and puts their records back.
func (s *fairShareStore) restore(ctx context.Context, logger klog.Logger) error {
	list, err := s.client.CoreV1().ConfigMaps(s.namespace).List(ctx, metav1.ListOptions{LabelSelector: labelComponent + "=" + fairShareComponent})
	if err != nil {
		logger.Error(err, "Could not read the usage history of fair order; retrying, and writing none until it is read", "namespace", s.namespace)
		return err
	}
	var recs []fairshare.Record
	written := map[string][]byte{}
	bad := 0
	for i := range list.Items {
		cm := &list.Items[i]
		data := []byte(cm.Data[fairShareKey])
		r, b := fairshare.Decode(data)
		recs, bad = append(recs, r...), bad+b
		written[cm.Name] = data
	}
	s.history.Restore(recs)
	s.mu.Lock()
	s.restored, s.written = true, written
	s.mu.Unlock()
	if bad > 0 {
		logger.Error(nil, "Lines of the usage history that do not decode were skipped", "count", bad, "namespace", s.namespace)
	}
	logger.V(2).Info("Usage history of fair order restored", "records", len(recs), "shards", len(list.Items))
	return nil
}

// write writes the shards that changed, when this replica leads and the
// history was restored. A replica that begins to lead writes every shard
// once: another leader wrote since it read them.
func (s *fairShareStore) write(ctx context.Context, logger klog.Logger) {
	s.mu.Lock()
	defer s.mu.Unlock()
	leads := s.leading()
	if !leads || !s.restored {
		s.led = leads
		return
	}
	if !s.led {
		// Rewrite every shard known (keeping their names, to delete
		// those no longer used).
		s.led = true
		for name := range s.written {
			s.written[name] = nil
		}
	}
	recs := s.history.Records()
	var shards [][]byte
	if len(recs) > 0 {
		var err error
		if shards, err = fairshare.Shards(recs, fairshare.TargetShardBytes, fairshare.MaxShardBytes); err != nil {
			logger.Error(err, "Could not write the usage history of fair order")
			return
		}
		if len(shards) > fairShareMaxShards {
			logger.Error(nil, "The usage history of fair order needs more ConfigMaps than allowed: the histories of the last shards are not written",
				"shards", len(shards), "allowed", fairShareMaxShards)
			shards = shards[:fairShareMaxShards]
		}
	}
	keep := map[string]bool{}
	for i, data := range shards {
		name := fairShareName + strconv.Itoa(i)
		keep[name] = true
		if old, ok := s.written[name]; ok && bytes.Equal(old, data) {
			continue
		}
		if err := s.put(ctx, name, len(shards), data); err != nil {
			logger.Error(err, "Could not write the usage history of fair order", "configMap", klog.KRef(s.namespace, name))
			delete(s.written, name)
			continue
		}
		s.written[name] = data
	}
	// Shards of a larger count before, or of a history now empty.
	names := make([]string, 0, len(s.written))
	for name := range s.written {
		if !keep[name] {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		err := s.client.CoreV1().ConfigMaps(s.namespace).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			logger.Error(err, "Could not delete a shard of the usage history no longer used", "configMap", klog.KRef(s.namespace, name))
			continue
		}
		delete(s.written, name)
	}
}

// put creates or replaces one shard.
func (s *fairShareStore) put(ctx context.Context, name string, shards int, data []byte) error {
	cm := &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: s.namespace,
			Labels:      map[string]string{labelComponent: fairShareComponent, labelPartOf: "userquota"},
			Annotations: map[string]string{annotationShards: strconv.Itoa(shards)},
		},
		Data: map[string]string{fairShareKey: string(data)},
	}
	cms := s.client.CoreV1().ConfigMaps(s.namespace)
	_, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		}
	}
	return err
}

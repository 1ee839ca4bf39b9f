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
)

// State kept across restarts in ConfigMaps of bounded size (pkg/cmshard):
// the usage history of fair order (fairshare.go) and the books of
// resource-seconds (accounting.go). Every replica reads its shards when it
// starts, before the pod handler charges the running pods; the leader
// writes the shards that changed every shardStoreEvery. A replica that
// could not read them writes none: it would overwrite what the last
// leader wrote with its own, partial state.

// shardStoreEvery is how often the leader writes the shards that changed.
const shardStoreEvery = 30 * time.Second

// Labels of the ConfigMaps.
const (
	labelComponent = "app.kubernetes.io/component"
	labelPartOf    = "app.kubernetes.io/part-of"
)

// shardKind names one part of the state and its ConfigMaps: prefix0 ..
// prefix(max-1), each holding its shard under key, labelled component,
// annotated with the number of shards. RBAC allows update and delete of
// these names only.
type shardKind struct {
	prefix, key, component, annotation string
	max                                int
	// what names the state in log lines.
	what string
}

// shardedState is the state a shardStore keeps.
type shardedState interface {
	// shards encodes the state to keep, one ConfigMap's data each (nil:
	// nothing to keep).
	shards() ([][]byte, error)
	// restore puts back what the shards written by some replica hold, and
	// returns how many records it read and how many lines it skipped.
	restore(data [][]byte) (records, bad int)
}

// shardStore reads and writes one shardedState's ConfigMaps.
type shardStore struct {
	client    kubernetes.Interface
	namespace string
	kind      shardKind
	state     shardedState
	leading   func() bool

	mu       sync.Mutex
	restored bool
	led      bool
	// written is each shard's data as last written or read (name ->
	// data): an unchanged shard is not written again.
	written map[string][]byte
}

// stateClient is a client of the plugin's own for a shardStore, named by
// userAgent, rate-limited apart from the scheduler's.
func (pl *Plugin) stateClient(userAgent string) (kubernetes.Interface, error) {
	client := pl.handle.ClientSet()
	if cfg := pl.handle.KubeConfig(); cfg != nil {
		cfg = restclient.CopyConfig(cfg)
		cfg.QPS, cfg.Burst = 5, 10
		var err error
		if client, err = kubernetes.NewForConfig(restclient.AddUserAgent(cfg, userAgent)); err != nil {
			return nil, fmt.Errorf("%s client: %w", userAgent, err)
		}
	}
	return client, nil
}

func (s *shardStore) isRestored() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restored
}

// restoreAtStart reads the shards, for at most 30 s (runShardStore
// retries a failed read).
func (s *shardStore) restoreAtStart(ctx context.Context) {
	restoreCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_ = s.restore(restoreCtx, klog.FromContext(ctx).WithName(Name))
}

// run retries a failed restore every shardStoreEvery, then calls settle
// once the pod handler has charged the running pods (synced), then writes
// every shardStoreEvery while this replica leads, until ctx ends.
func (s *shardStore) run(ctx context.Context, synced func() bool, settle func()) {
	logger := klog.FromContext(ctx).WithName(Name)
	if !s.isRestored() {
		_ = wait.PollUntilContextCancel(ctx, shardStoreEvery, false, func(ctx context.Context) (bool, error) {
			return s.restore(ctx, logger) == nil, nil
		})
	}
	// The running pods are charged once the pod handler saw them all:
	// from then on they stand for what ran, not the records.
	if !cache.WaitForCacheSync(ctx.Done(), synced) {
		return
	}
	settle()
	wait.UntilWithContext(ctx, func(ctx context.Context) { s.write(ctx, logger) }, shardStoreEvery)
}

// restore lists the ConfigMaps and puts their records back.
func (s *shardStore) restore(ctx context.Context, logger klog.Logger) error {
	list, err := s.client.CoreV1().ConfigMaps(s.namespace).List(ctx, metav1.ListOptions{LabelSelector: labelComponent + "=" + s.kind.component})
	if err != nil {
		logger.Error(err, "Could not read "+s.kind.what+"; retrying, and writing none until it is read", "namespace", s.namespace)
		return err
	}
	data := make([][]byte, 0, len(list.Items))
	written := map[string][]byte{}
	for i := range list.Items {
		cm := &list.Items[i]
		d := []byte(cm.Data[s.kind.key])
		data = append(data, d)
		written[cm.Name] = d
	}
	recs, bad := s.state.restore(data)
	s.mu.Lock()
	s.restored, s.written = true, written
	s.mu.Unlock()
	if bad > 0 {
		logger.Error(nil, "Lines of "+s.kind.what+" that do not decode were skipped", "count", bad, "namespace", s.namespace)
	}
	logger.V(2).Info("Restored "+s.kind.what, "records", recs, "shards", len(list.Items))
	return nil
}

// write writes the shards that changed, when this replica leads and the
// state was restored. A replica that begins to lead writes every shard
// once: another leader wrote since it read them.
func (s *shardStore) write(ctx context.Context, logger klog.Logger) {
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
	shards, err := s.state.shards()
	if err != nil {
		logger.Error(err, "Could not write "+s.kind.what)
		return
	}
	if len(shards) > s.kind.max {
		logger.Error(nil, "More ConfigMaps needed than allowed for "+s.kind.what+": the records of the last shards are not written",
			"shards", len(shards), "allowed", s.kind.max)
		shards = shards[:s.kind.max]
	}
	keep := map[string]bool{}
	for i, data := range shards {
		name := s.kind.prefix + strconv.Itoa(i)
		keep[name] = true
		if old, ok := s.written[name]; ok && bytes.Equal(old, data) {
			continue
		}
		if err := s.put(ctx, name, len(shards), data); err != nil {
			logger.Error(err, "Could not write "+s.kind.what, "configMap", klog.KRef(s.namespace, name))
			delete(s.written, name)
			continue
		}
		s.written[name] = data
	}
	// Shards of a larger count before, or of a state now empty.
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
			logger.Error(err, "Could not delete a shard of "+s.kind.what+" no longer used", "configMap", klog.KRef(s.namespace, name))
			continue
		}
		delete(s.written, name)
	}
}

// put creates or replaces one shard.
func (s *shardStore) put(ctx context.Context, name string, shards int, data []byte) error {
	cm := &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: s.namespace,
			Labels:      map[string]string{labelComponent: s.kind.component, labelPartOf: "userquota"},
			Annotations: map[string]string{s.kind.annotation: strconv.Itoa(shards)},
		},
		Data: map[string]string{s.kind.key: string(data)},
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

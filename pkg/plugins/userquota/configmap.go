package userquota

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/userquota/userquota/pkg/hold"
	"github.com/userquota/userquota/pkg/metrics"
	"github.com/userquota/userquota/pkg/queueconfig"
)

// Reasons of the events the plugin raises on its ConfigMap.
const (
	ReasonInvalidConfig = "InvalidQueueConfig"
	ReasonConfigApplied = "QueueConfigApplied"
)

// startConfigInformer watches the one ConfigMap holding the queue config,
// with an informer of its own scoped to that namespace and name (RBAC: get,
// list, watch of ConfigMaps in that namespace only), and waits until the
// current version, if any, is in force.
func (pl *Plugin) startConfigInformer(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	factory := informers.NewSharedInformerFactoryWithOptions(pl.handle.ClientSet(), 0,
		informers.WithNamespace(pl.args.ConfigMapNamespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", pl.args.ConfigMapName).String()
		}))
	inf := factory.Core().V1().ConfigMaps().Informer()
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { pl.onConfigMap(logger, obj) },
		UpdateFunc: func(_, obj interface{}) { pl.onConfigMap(logger, obj) },
		DeleteFunc: func(obj interface{}) { pl.onConfigMapDelete(logger, obj) },
	})
	if err != nil {
		return fmt.Errorf("watching ConfigMap %s/%s: %w", pl.args.ConfigMapNamespace, pl.args.ConfigMapName, err)
	}
	factory.Start(ctx.Done())
	syncCtx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), reg.HasSynced) {
		return fmt.Errorf("could not list ConfigMap %s/%s within %s: can the scheduler get, list and watch ConfigMaps in namespace %s?",
			pl.args.ConfigMapNamespace, pl.args.ConfigMapName, syncTimeout, pl.args.ConfigMapNamespace)
	}
	switch {
	case pl.held.configError() != nil:
		logger.Info("WARNING: the queue config ConfigMap does not load and no config is in force: every pod of this scheduler is held until a valid config is applied",
			"configMap", klog.KRef(pl.args.ConfigMapNamespace, pl.args.ConfigMapName))
	case pl.Config() == nil:
		logger.Info("Queue config ConfigMap not found: no limits in force, usage is still tracked",
			"configMap", klog.KRef(pl.args.ConfigMapNamespace, pl.args.ConfigMapName))
	}
	return nil
}

// onConfigMap parses and validates a new version of the ConfigMap and puts
// it in force in one step. An invalid version changes nothing when a valid
// config is in force (the last good one stays); when none is, every pod
// of this scheduler is held until a valid version comes (fail closed:
// docs/design.md, "Config"). Either way it is logged with every error and
// raises a Warning event on the ConfigMap.
func (pl *Plugin) onConfigMap(logger klog.Logger, obj interface{}) {
	cm, ok := obj.(*v1.ConfigMap)
	if !ok || cm.Name != pl.args.ConfigMapName {
		return
	}
	cfg, err := pl.parseConfigMap(cm)
	if err != nil {
		pl.invalidConfig(logger, cm, err)
		return
	}
	if old := pl.Config(); old != nil && old.Checksum == cfg.Checksum {
		return // a resync or a change elsewhere in the ConfigMap
	}
	// Config, partition and elastic flag go in force as one value
	// (parseConfigMap made sure the partition is there), and the usage
	// history follows it (it records only while a queue is fair).
	if err := pl.ledger.Enforce(cfg, pl.args.Partition); err != nil {
		logger.Error(err, "Queue config not applied", "configMap", klog.KObj(cm))
		return
	}
	// Only now, with limits in force, may pods be decided again; the
	// held ones are let in below (onConfigChange).
	pl.held.setConfigError(nil)
	metrics.RecordConfigReload(metrics.ResultApplied)
	// Room admitted under the old config goes: it would keep older pods
	// out under a stricter one (docs/design.md, "Hold and let in").
	if n := pl.ugm.UnadmitAll(); n > 0 {
		logger.V(2).Info("Queue config changed: room held for admitted pods dropped", "pods", n)
	}
	// Shares follow the new config before the held pods are retried.
	pl.elastic.configChanged(logger)
	logger.Info("Queue config in force", "configMap", klog.KObj(cm), "resourceVersion", cm.ResourceVersion, "checksum", cfg.Checksum[:12])
	for _, n := range cfg.Notices {
		logger.Info("Queue config notice", "notice", n)
	}
	pl.handle.EventRecorder().Eventf(cm, nil, v1.EventTypeNormal, ReasonConfigApplied, "LoadConfig", "queue config %s in force", cfg.Checksum[:12])
	pl.onConfigChange(logger)
}

// invalidConfig reports a version of the ConfigMap that does not load:
// logged with every error and a Warning event on the ConfigMap. With a
// valid config in force nothing else changes. Without one, every pod is
// held for err (fail closed), and the pods held for an earlier invalid
// version are told the new reason.
func (pl *Plugin) invalidConfig(logger klog.Logger, cm *v1.ConfigMap, err error) {
	metrics.RecordConfigReload(metrics.ResultInvalid)
	note := err.Error()
	if len(note) > 900 {
		// Events notes are capped at 1 KiB; the log has the rest.
		note = strings.ToValidUTF8(note[:900], "") + "... (see the scheduler log)"
	}
	pl.handle.EventRecorder().Eventf(cm, nil, v1.EventTypeWarning, ReasonInvalidConfig, "LoadConfig", "%s", note)
	if pl.Config() != nil {
		logger.Error(err, "Queue config is invalid; the previous config stays in force", "configMap", klog.KObj(cm), "resourceVersion", cm.ResourceVersion)
		return
	}
	logger.Error(err, "Queue config is invalid and no config is in force: every pod of this scheduler is held until a valid config is applied",
		"configMap", klog.KObj(cm), "resourceVersion", cm.ResourceVersion)
	reason := &hold.ConfigError{Err: err}
	old := pl.held.configError()
	pl.held.setConfigError(reason)
	if old == nil || old.Error() == reason.Error() {
		return
	}
	for _, p := range pl.held.of(hold.KindConfig, queueOrder{pl.ugm}) {
		if pod := pl.current(p); pod != nil {
			pl.holdPod(logger, pod, nil, reason, false)
		}
	}
}

// configMapError is why a version of the ConfigMap does not load; it
// names the ConfigMap and the key.
type configMapError struct {
	namespace, name, key string
	// trees are the keys holding quota trees, read with key.
	trees []string
	err   error
}

func (e *configMapError) Error() string {
	if len(e.trees) > 0 {
		return fmt.Sprintf("ConfigMap %s/%s, keys %q and %s: %v", e.namespace, e.name, e.key, quotedList(e.trees), e.err)
	}
	return fmt.Sprintf("ConfigMap %s/%s, key %q: %v", e.namespace, e.name, e.key, e.err)
}

func (e *configMapError) Unwrap() error { return e.err }

// parseConfigMap loads the queue config of a version of the ConfigMap,
// and the quota trees beside it (docs/forests.md), with the whole
// validation the config webhook runs too (queueconfig.LoadConfigMap: the
// config, the partition of the plugin's args in it, the trees).
func (pl *Plugin) parseConfigMap(cm *v1.ConfigMap) (*queueconfig.Config, error) {
	fail := func(err error) error {
		return &configMapError{namespace: cm.Namespace, name: cm.Name, key: pl.args.ConfigMapKey, trees: treeKeys(cm.Data), err: err}
	}
	if _, ok := cm.Data[pl.args.ConfigMapKey]; !ok {
		keys := make([]string, 0, len(cm.Data))
		for k := range cm.Data {
			keys = append(keys, fmt.Sprintf("%q", k))
		}
		sort.Strings(keys)
		if len(keys) == 0 {
			keys = append(keys, "none")
		}
		return nil, fail(fmt.Errorf("no such key (the ConfigMap has %s)", strings.Join(keys, ", ")))
	}
	cfg, err := queueconfig.LoadConfigMap(cm.Data, pl.args.ConfigMapKey, pl.args.Partition)
	if err != nil {
		return nil, fail(err)
	}
	return cfg, nil
}

// onConfigMapDelete keeps the last good config: deleting the ConfigMap by
// mistake must not lift every limit.
func (pl *Plugin) onConfigMapDelete(logger klog.Logger, obj interface{}) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	cm, ok := obj.(*v1.ConfigMap)
	if !ok {
		logger.Error(errors.New("unexpected object"), "ConfigMap delete event", "type", fmt.Sprintf("%T", obj))
		return
	}
	logger.Info("WARNING: queue config ConfigMap deleted; the last valid config stays in force until a new one is created", "configMap", klog.KObj(cm))
}

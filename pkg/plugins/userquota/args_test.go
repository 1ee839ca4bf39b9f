package userquota

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	fwk "k8s.io/kube-scheduler/framework"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/queuesort"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	tf "k8s.io/kubernetes/pkg/scheduler/testing/framework"
	"k8s.io/utils/ptr"

	"github.com/userquota/userquota/pkg/hold"
)

func defaultArgs() Args {
	return Args{
		ConfigMapNamespace: DefaultConfigMapNamespace,
		ConfigMapName:      DefaultConfigMapName,
		ConfigMapKey:       DefaultConfigMapKey,
		Partition:          DefaultPartition,
		DefaultQueue:       DefaultQueue,
		DefaultUser:        DefaultUser,
		RESTAddress:        ptr.To(DefaultRESTAddress),
		StarvationWait:     DefaultStarvationWait,
		StartUpWait:        DefaultStartUpWait,
		StatusQPS:          DefaultStatusQPS,
		StatusBurst:        DefaultStatusBurst,
		StatusBusyQPS:      DefaultStatusBusyQPS,
	}
}

func TestDecodeArgs(t *testing.T) {
	json := func(s string) runtime.Object {
		return &runtime.Unknown{Raw: []byte(s), ContentType: runtime.ContentTypeJSON}
	}
	yaml := func(s string) runtime.Object {
		return &runtime.Unknown{Raw: []byte(s), ContentType: runtime.ContentTypeYAML}
	}
	with := func(mutate func(*Args)) Args {
		a := defaultArgs()
		mutate(&a)
		return a
	}
	tests := []struct {
		name string
		obj  runtime.Object
		want Args
		// wantErr lists substrings the error must hold (nil: no error).
		wantErr []string
	}{
		{name: "nil args take every default", obj: nil, want: defaultArgs()},
		{name: "empty raw args take every default", obj: json(""), want: defaultArgs()},
		{name: "empty typed args take every default", obj: &Args{}, want: defaultArgs()},
		{
			name: "JSON raw args",
			obj: json(`{"configMapNamespace":"kube-system","configMapName":"queues","configMapKey":"q.yaml",
				"partition":"gpu","defaultQueue":"root.batch","defaultUser":"anon","releaseOnTerminating":true,"restAddress":"127.0.0.1:8080"}`),
			want: with(func(a *Args) {
				a.ConfigMapNamespace, a.ConfigMapName, a.ConfigMapKey, a.Partition = "kube-system", "queues", "q.yaml", "gpu"
				a.DefaultQueue, a.DefaultUser, a.ReleaseOnTerminating, a.RESTAddress = "root.batch", "anon", true, ptr.To("127.0.0.1:8080")
			}),
		},
		{
			name: "YAML raw args",
			obj:  yaml("configMapName: queues\ndefaultQueue: root.batch\nreleaseOnTerminating: true\n"),
			want: with(func(a *Args) { a.ConfigMapName, a.DefaultQueue, a.ReleaseOnTerminating = "queues", "root.batch", true }),
		},
		{
			name: "restAddress empty string disables the REST API",
			obj:  json(`{"restAddress":""}`),
			want: with(func(a *Args) { a.RESTAddress = ptr.To("") }),
		},
		{
			name: "restAddress empty string in YAML disables the REST API",
			obj:  yaml(`restAddress: ""`),
			want: with(func(a *Args) { a.RESTAddress = ptr.To("") }),
		},
		{name: "unknown field is rejected by name", obj: json(`{"configMapNamespace":"a","queueConfig":"x"}`), wantErr: []string{`unknown field "queueConfig"`}},
		{name: "unknown field in YAML is rejected by name", obj: yaml("defaultQueu: root.x\n"), wantErr: []string{`unknown field "defaultQueu"`}},
		{name: "malformed YAML", obj: yaml("defaultQueue: [\n"), wantErr: []string{Name + " args"}},
		{name: "raw args without bytes take every default", obj: &runtime.Unknown{}, want: defaultArgs()},
		{name: "bad namespace", obj: json(`{"configMapNamespace":"Bad_NS"}`), wantErr: []string{"args.configMapNamespace", `"Bad_NS"`}},
		{name: "bad ConfigMap name", obj: json(`{"configMapName":"no spaces"}`), wantErr: []string{"args.configMapName", `"no spaces"`}},
		{name: "bad key", obj: json(`{"configMapKey":"a/b"}`), wantErr: []string{"args.configMapKey", `"a/b"`}},
		{name: "defaultQueue not a full path", obj: json(`{"defaultQueue":"default"}`), wantErr: []string{"args.defaultQueue", `"default"`}},
		{name: "defaultQueue with an empty part", obj: json(`{"defaultQueue":"root..a"}`), wantErr: []string{"args.defaultQueue"}},
		{name: "defaultQueue ending in a dot", obj: json(`{"defaultQueue":"root.a."}`), wantErr: []string{"args.defaultQueue"}},
		{name: "restAddress without a port", obj: json(`{"restAddress":"localhost"}`), wantErr: []string{"args.restAddress", `"localhost"`}},
		{name: "blank partition", obj: json(`{"partition":" "}`), wantErr: []string{"args.partition"}},
		{name: "blank default user", obj: json(`{"defaultUser":" "}`), wantErr: []string{"args.defaultUser"}},
		{
			name: "starvation wait and the status client's rate",
			obj:  yaml("starvationWait: 30s\nstatusQPS: 5\nstatusBurst: 10\n"),
			want: with(func(a *Args) {
				a.StarvationWait, a.StatusQPS, a.StatusBurst = "30s", 5, 10
			}),
		},
		{name: "starvation wait 0 turns it off", obj: json(`{"starvationWait":"0s"}`), want: with(func(a *Args) { a.StarvationWait = "0s" })},
		{name: "negative starvation wait", obj: json(`{"starvationWait":"-1s"}`), wantErr: []string{"args.starvationWait", `"-1s"`, "from 0 (off) to 24h"}},
		{name: "starvation wait too long", obj: json(`{"starvationWait":"25h"}`), wantErr: []string{"args.starvationWait"}},
		{name: "starvation wait not a duration", obj: json(`{"starvationWait":"soon"}`), wantErr: []string{"args.starvationWait", `"soon"`}},
		{name: "start-up wait", obj: json(`{"startUpWait":"1m"}`), want: with(func(a *Args) { a.StartUpWait = "1m" })},
		{name: "start-up wait 0 turns it off", obj: json(`{"startUpWait":"0s"}`), want: with(func(a *Args) { a.StartUpWait = "0s" })},
		{name: "negative start-up wait", obj: json(`{"startUpWait":"-1s"}`), wantErr: []string{"args.startUpWait", `"-1s"`, "from 0 (off) to 10m"}},
		{name: "start-up wait too long", obj: json(`{"startUpWait":"11m"}`), wantErr: []string{"args.startUpWait"}},
		{name: "start-up wait not a duration", obj: json(`{"startUpWait":"soon"}`), wantErr: []string{"args.startUpWait", `"soon"`}},
		{name: "negative status rate", obj: json(`{"statusQPS":-1,"statusBurst":-2}`), wantErr: []string{"args.statusQPS", "args.statusBurst"}},
		{name: "status rate while binding", obj: json(`{"statusBusyQPS":0.5}`), want: with(func(a *Args) { a.StatusBusyQPS = 0.5 })},
		{name: "negative status rate while binding", obj: json(`{"statusBusyQPS":-1}`), wantErr: []string{"args.statusBusyQPS", "at least 0.01"}},
		{name: "status rate while binding too low", obj: json(`{"statusBusyQPS":1e-30}`), wantErr: []string{"args.statusBusyQPS", "at least 0.01"}},
		{
			name:    "every invalid field is reported",
			obj:     json(`{"configMapNamespace":"Bad_NS","configMapKey":"a/b","defaultQueue":"x","restAddress":"nope"}`),
			wantErr: []string{"args.configMapNamespace", "args.configMapKey", "args.defaultQueue", "args.restAddress"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeArgs(tc.obj)
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("decodeArgs: no error, want one naming %q; got %+v", tc.wantErr, got)
				}
				for _, s := range tc.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not name %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("decodeArgs: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("args (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestDecodeArgsRejectsOtherTypes: the scheduler hands out-of-tree args over
// as *runtime.Unknown; anything else is a programming error, reported.
func TestDecodeArgsRejectsOtherTypes(t *testing.T) {
	_, err := decodeArgs(&schedconfig.NodeResourcesFitArgs{})
	if err == nil || !strings.Contains(err.Error(), "want *runtime.Unknown") {
		t.Fatalf("decodeArgs(NodeResourcesFitArgs) = %v, want an error naming the expected type", err)
	}
}

// TestArgsFromSchedulerConfiguration decodes a KubeSchedulerConfiguration
// file the way kube-scheduler does and hands the plugin its args.
func TestArgsFromSchedulerConfiguration(t *testing.T) {
	file := `
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: userquota-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: UserQuota
  pluginConfig:
  - name: UserQuota
    args:
      configMapNamespace: quota
      defaultQueue: root.batch
      restAddress: ""
`
	obj, _, err := scheme.Codecs.UniversalDecoder().Decode([]byte(file), nil, nil)
	if err != nil {
		t.Fatalf("decoding the scheduler configuration: %v", err)
	}
	cfg := obj.(*schedconfig.KubeSchedulerConfiguration)
	var raw runtime.Object
	for _, pc := range cfg.Profiles[0].PluginConfig {
		if pc.Name == Name {
			raw = pc.Args
		}
	}
	got, err := decodeArgs(raw)
	if err != nil {
		t.Fatalf("decodeArgs(%T): %v", raw, err)
	}
	want := defaultArgs()
	want.ConfigMapNamespace, want.DefaultQueue, want.RESTAddress = "quota", "root.batch", ptr.To("")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("args (-want,+got):\n%s", diff)
	}
}

// TestNewRejectsInvalidArgs: the framework refuses to start a profile whose
// UserQuota args are invalid, with the field in the message.
func TestNewRejectsInvalidArgs(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs := fake.NewClientset()
	_, err := tf.NewFramework(ctx, []tf.RegisterPluginFunc{
		tf.RegisterQueueSortPlugin(queuesort.Name, queuesort.New),
		tf.RegisterBindPlugin(defaultbinder.Name, defaultbinder.New),
		tf.RegisterPluginAsExtensions(Name, func(ctx context.Context, _ runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
			return New(ctx, &runtime.Unknown{Raw: []byte(`{"defaultQueue":"sandbox"}`)}, h)
		}, "PreFilter"),
	}, profileName,
		frameworkruntime.WithClientSet(cs),
		frameworkruntime.WithInformerFactory(informers.NewSharedInformerFactory(cs, 0)),
	)
	if err == nil || !strings.Contains(err.Error(), "args.defaultQueue") {
		t.Fatalf("NewFramework = %v, want an error naming args.defaultQueue", err)
	}
}

// TestStarvationDefault: the arg's default is the book's.
func TestStarvationDefault(t *testing.T) {
	a := Args{}
	a.SetDefaults()
	if a.Starvation() != hold.DefaultStarvation {
		t.Errorf("starvationWait default %v, want hold.DefaultStarvation %v", a.Starvation(), hold.DefaultStarvation)
	}
}

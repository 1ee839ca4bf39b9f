package userquota

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/userquota/userquota/pkg/podmeta"
	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

// treeConfig has leaves to resolve bare names against: a unique leaf
// (only), a name used by two leaves (x) and a parent (a).
var treeConfig = queueconfigtest.Root(`
queues:
- name: default
- name: sandbox
- name: a
  queues:
  - name: only
  - name: x
- name: b
  queues:
  - name: x
`)

// got is what podRequest made of a pod, in comparable form.
type got struct {
	User      string
	Groups    []string
	Queue     string
	App       string
	Resources map[string]int64
}

func requestOf(t *testing.T, pl *Plugin, pod *v1.Pod, cfg *queueconfig.Partition) (got, error) {
	t.Helper()
	req, err := pl.podRequest(pod, cfg, pl.queues())
	if err != nil {
		return got{}, err
	}
	return got{User: req.User, Groups: req.Groups, Queue: req.Queue, App: req.App.String(), Resources: req.Resources.Map()}, nil
}

func TestPodRequest(t *testing.T) {
	tree := queueconfigtest.MustParse(t, treeConfig).Partition("default")
	base := func() *st.PodWrapper { return podOf("p").Req(cpu("1")) }
	one := map[string]int64{"cpu": 1000, "pods": 1}
	tests := []struct {
		name string
		pod  *v1.Pod
		cfg  *queueconfig.Partition // the config in force (nil: none)
		args func(*Args)
		want got
		// wantErr is a substring of the error (empty: no error).
		wantErr string
	}{
		// user and groups
		{
			name: "our user-info annotation",
			pod:  base().Annotation(podmeta.AnnotationUserInfo, `{"user":"sue","groups":["dev","ops"]}`).Obj(),
			want: got{User: "sue", Groups: []string{"dev", "ops"}, Queue: "root.default", App: "ns1/pod/uid-p", Resources: one},
		},
		{
			name:    "requireUserInfo: no annotation refused naming the webhook",
			pod:     base().Obj(),
			args:    func(a *Args) { a.RequireUserInfo = true },
			wantErr: "userquota admission webhook (userquota-webhook)",
		},
		{
			name: "requireUserInfo: YuniKorn's annotation counts",
			pod:  base().Annotation("yunikorn.apache.org/user.info", `{"user":"bob","groups":["ops"]}`).Obj(),
			args: func(a *Args) { a.RequireUserInfo = true },
			want: got{User: "bob", Groups: []string{"ops"}, Queue: "root.default", App: "ns1/pod/uid-p", Resources: one},
		},
		{
			name: "YuniKorn's user.info annotation",
			pod:  base().Annotation("yunikorn.apache.org/user.info", `{"user":"bob","groups":["ops"]}`).Obj(),
			want: got{User: "bob", Groups: []string{"ops"}, Queue: "root.default", App: "ns1/pod/uid-p", Resources: one},
		},
		{
			name: "ours wins over YuniKorn's",
			pod: base().Annotation(podmeta.AnnotationUserInfo, `{"user":"sue"}`).
				Annotation("yunikorn.apache.org/user.info", `{"user":"bob"}`).Obj(),
			want: got{User: "sue", Queue: "root.default", App: "ns1/pod/uid-p", Resources: one},
		},
		{
			name: "no user info: the default user without groups",
			pod:  base().Obj(),
			want: got{User: "nobody", Queue: "root.default", App: "ns1/pod/uid-p", Resources: one},
		},
		{
			name: "no user info: the configured default user",
			pod:  base().Obj(),
			args: func(a *Args) { a.DefaultUser = "anonymous" },
			want: got{User: "anonymous", Queue: "root.default", App: "ns1/pod/uid-p", Resources: one},
		},
		{
			name:    "malformed JSON in our annotation is refused, naming it",
			pod:     base().Annotation(podmeta.AnnotationUserInfo, `{"user":"sue"`).Obj(),
			wantErr: "annotation userquota.io/user-info is not valid user info JSON",
		},
		{
			name:    "malformed JSON in YuniKorn's annotation is refused, naming it",
			pod:     base().Annotation("yunikorn.apache.org/user.info", `sue`).Obj(),
			wantErr: "annotation yunikorn.apache.org/user.info is not valid user info JSON",
		},
		{
			name:    "malformed ours does not fall back to YuniKorn's",
			pod:     base().Annotation(podmeta.AnnotationUserInfo, `[]`).Annotation("yunikorn.apache.org/user.info", `{"user":"bob"}`).Obj(),
			wantErr: "annotation userquota.io/user-info is not valid user info JSON",
		},
		{
			name:    "unknown field in the user info is refused",
			pod:     base().Annotation(podmeta.AnnotationUserInfo, `{"user":"sue","group":"dev"}`).Obj(),
			wantErr: "annotation userquota.io/user-info is not valid user info JSON",
		},
		{
			name:    "trailing data after the user info JSON is refused",
			pod:     base().Annotation(podmeta.AnnotationUserInfo, `{"user":"sue"} {"user":"root"}`).Obj(),
			wantErr: "annotation userquota.io/user-info is not valid user info JSON",
		},
		{
			name:    "an empty user info annotation is refused",
			pod:     base().Annotation("yunikorn.apache.org/user.info", ``).Obj(),
			wantErr: "annotation yunikorn.apache.org/user.info is not valid user info JSON",
		},
		{
			name:    "user info without a user is refused",
			pod:     base().Annotation(podmeta.AnnotationUserInfo, `{"groups":["dev"]}`).Obj(),
			wantErr: "annotation userquota.io/user-info has no user",
		},

		// queue
		{
			name: "queue from our annotation",
			pod:  base().Annotation(podmeta.LabelQueue, "root.sandbox").Label(podmeta.LabelQueue, "root.a.only").Obj(),
			cfg:  tree,
			want: got{User: "nobody", Queue: "root.sandbox", App: "ns1/pod/uid-p", Resources: one},
		},
		{
			name: "queue from our label",
			pod:  base().Label(podmeta.LabelQueue, "root.a.only").Annotation("yunikorn.apache.org/queue", "root.sandbox").Obj(),
			cfg:  tree,
			want: got{User: "nobody", Queue: "root.a.only", App: "ns1/pod/uid-p", Resources: one},
		},
		{
			name: "queue from YuniKorn's annotation",
			pod:  base().Annotation("yunikorn.apache.org/queue", "root.sandbox").Label("yunikorn.apache.org/queue", "root.a.only").Obj(),
			cfg:  tree,
			want: got{User: "nobody", Queue: "root.sandbox", App: "ns1/pod/uid-p", Resources: one},
		},
		{
			name: "queue from YuniKorn's label",
			pod:  base().Label("yunikorn.apache.org/queue", "root.a.only").Label("queue", "root.sandbox").Obj(),
			cfg:  tree,
			want: got{User: "nobody", Queue: "root.a.only", App: "ns1/pod/uid-p", Resources: one},
		},
		{
			name: "queue from the queue label",
			pod:  base().Label("queue", "root.sandbox").Obj(),
			cfg:  tree,
			want: got{User: "nobody", Queue: "root.sandbox", App: "ns1/pod/uid-p", Resources: one},
		},
		{
			name: "leaf name that is a child of root: root.NAME",
			pod:  base().Label(podmeta.LabelQueue, "sandbox").Obj(),
			cfg:  tree,
			want: got{User: "nobody", Queue: "root.sandbox", App: "ns1/pod/uid-p", Resources: one},
		},
		{
			name: "unique leaf name deeper in the tree",
			pod:  base().Label(podmeta.LabelQueue, "only").Obj(),
			cfg:  tree,
			want: got{User: "nobody", Queue: "root.a.only", App: "ns1/pod/uid-p", Resources: one},
		},
		{
			name: "path without root.",
			pod:  base().Label(podmeta.LabelQueue, "b.x").Obj(),
			cfg:  tree,
			want: got{User: "nobody", Queue: "root.b.x", App: "ns1/pod/uid-p", Resources: one},
		},
		{
			name: "queue names are case-insensitive",
			pod:  base().Label(podmeta.LabelQueue, "Only").Obj(),
			cfg:  tree,
			want: got{User: "nobody", Queue: "root.a.only", App: "ns1/pod/uid-p", Resources: one},
		},
		{
			name: "full paths are case-insensitive",
			pod:  base().Label(podmeta.LabelQueue, "ROOT.Sandbox").Obj(),
			cfg:  tree,
			want: got{User: "nobody", Queue: "root.sandbox", App: "ns1/pod/uid-p", Resources: one},
		},
		{
			name:    "ambiguous leaf name is an error listing the candidates",
			pod:     base().Label(podmeta.LabelQueue, "x").Obj(),
			cfg:     tree,
			wantErr: `queue "x" (from label userquota.io/queue) is ambiguous: root.a.x, root.b.x; use the full path`,
		},
		{
			name:    "unknown leaf name is an error",
			pod:     base().Label("queue", "nope").Obj(),
			cfg:     tree,
			wantErr: `queue "nope" (from label queue) does not exist in the queue config`,
		},
		{
			name: "bare name without a config: root.NAME",
			pod:  base().Label(podmeta.LabelQueue, "anything").Obj(),
			want: got{User: "nobody", Queue: "root.anything", App: "ns1/pod/uid-p", Resources: one},
		},
		{
			name: "no queue: the default queue",
			pod:  base().Obj(),
			cfg:  tree,
			want: got{User: "nobody", Queue: "root.default", App: "ns1/pod/uid-p", Resources: one},
		},
		{
			name: "no queue: the configured default queue",
			pod:  base().Obj(),
			cfg:  tree,
			args: func(a *Args) { a.DefaultQueue = "root.a.only" },
			want: got{User: "nobody", Queue: "root.a.only", App: "ns1/pod/uid-p", Resources: one},
		},
		{
			name: "empty queue label is ignored",
			pod:  base().Label(podmeta.LabelQueue, "").Label("queue", "sandbox").Obj(),
			cfg:  tree,
			want: got{User: "nobody", Queue: "root.sandbox", App: "ns1/pod/uid-p", Resources: one},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := defaultArgs()
			if tc.args != nil {
				tc.args(&a)
			}
			pl := &Plugin{args: a, requests: testRequests}
			g, err := requestOf(t, pl, tc.pod, tc.cfg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("podRequest error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("podRequest: %v", err)
			}
			if diff := cmp.Diff(tc.want, g, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("request (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestPodApp(t *testing.T) {
	rs := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"}
	job := schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}
	sts := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}
	tests := []struct {
		name string
		pod  *v1.Pod
		want string
	}{
		{name: "our app-id label", pod: podOf("p").Label(podmeta.LabelAppID, "a1").Label("applicationId", "a2").OwnerReference("web-5d4f", rs).Obj(), want: "ns1/a1"},
		{name: "applicationId label", pod: podOf("p").Label("applicationId", "a2").Label("yunikorn.apache.org/app-id", "a3").Obj(), want: "ns1/a2"},
		{name: "yunikorn.apache.org/app-id label", pod: podOf("p").Label("yunikorn.apache.org/app-id", "a3").Label("spark-app-selector", "a4").Obj(), want: "ns1/a3"},
		{name: "spark-app-selector label", pod: podOf("p").Label("spark-app-selector", "spark-123").Obj(), want: "ns1/spark-123"},
		{name: "app id as an annotation", pod: podOf("p").Annotation(podmeta.LabelAppID, "a5").Obj(), want: "ns1/a5"},
		{
			name: "ReplicaSet with pod-template-hash: the Deployment",
			pod:  podOf("p").Label("pod-template-hash", "5d4f").OwnerReference("web-5d4f", rs).Obj(),
			want: "ns1/Deployment/web",
		},
		{
			name: "the new ReplicaSet of a rollout: the same Deployment",
			pod:  podOf("q").Label("pod-template-hash", "77c9b").OwnerReference("web-77c9b", rs).Obj(),
			want: "ns1/Deployment/web",
		},
		{
			name: "ReplicaSet without pod-template-hash: the ReplicaSet",
			pod:  podOf("p").OwnerReference("web-5d4f", rs).Obj(),
			want: "ns1/ReplicaSet/web-5d4f",
		},
		{
			name: "ReplicaSet whose name does not end in the hash: the ReplicaSet",
			pod:  podOf("p").Label("pod-template-hash", "abc").OwnerReference("standalone", rs).Obj(),
			want: "ns1/ReplicaSet/standalone",
		},
		{name: "Job owner", pod: podOf("p").OwnerReference("pi-28765", job).Obj(), want: "ns1/Job/pi-28765"},
		{name: "StatefulSet owner", pod: podOf("p").OwnerReference("db", sts).Obj(), want: "ns1/StatefulSet/db"},
		{name: "no owner: the pod's UID", pod: podOf("p").Obj(), want: "ns1/pod/uid-p"},
		{
			name: "an owner that is not the controller does not count",
			pod: func() *v1.Pod {
				p := podOf("p").OwnerReference("pi", job).Obj()
				p.OwnerReferences[0].Controller = nil
				return p
			}(),
			want: "ns1/pod/uid-p",
		},
		{name: "namespace is part of the key", pod: podOf("p").Namespace("other").Label(podmeta.LabelAppID, "a1").Obj(), want: "other/a1"},
		// No explicit id can be an owner-derived one: those contain '/',
		// which no valid label value does. The API server refuses such a
		// label; an annotation (or a label from a source that does not
		// validate) is skipped.
		{
			name: "a naked pod cannot join a Deployment's application by annotation",
			pod:  podOf("p").Annotation("applicationId", "Deployment/web").Obj(),
			want: "ns1/pod/uid-p",
		},
		{
			name: "nor by label",
			pod:  podOf("p").Label(podmeta.LabelAppID, "Deployment/web").Obj(),
			want: "ns1/pod/uid-p",
		},
		{
			name: "an invalid annotation falls through to the next key",
			pod:  podOf("p").Annotation(podmeta.LabelAppID, "pod/uid-q").Annotation("spark-app-selector", "spark-1").Obj(),
			want: "ns1/spark-1",
		},
		{
			name: "an annotation with control characters is skipped",
			pod:  podOf("p").Annotation(podmeta.LabelAppID, "a\x1b[2Jb").OwnerReference("pi", job).Obj(),
			want: "ns1/Job/pi",
		},
		{
			name: "an annotation longer than a label value is skipped",
			pod:  podOf("p").Annotation(podmeta.LabelAppID, strings.Repeat("a", 64)).Obj(),
			want: "ns1/pod/uid-p",
		},
		{name: "an annotation of 63 characters counts", pod: podOf("p").Annotation(podmeta.LabelAppID, strings.Repeat("a", 63)).Obj(), want: "ns1/" + strings.Repeat("a", 63)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, podApp(tc.pod).String()); diff != "" {
				t.Errorf("app (-want,+got):\n%s", diff)
			}
		})
	}
}

package webhook

import (
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/userquota/userquota/pkg/podmeta"
)

// Issue 20, point 1: identity through every controller. Each case names
// the way around the stamp it closes (docs/security.md, "Identity through
// every controller").

// replicationController is an RC whose template names scheduler.
func replicationController(scheduler string, annotations map[string]string) map[string]any {
	rc := deployment(scheduler, annotations)
	rc["apiVersion"], rc["kind"] = "v1", "ReplicationController"
	rc["metadata"].(map[string]any)["name"] = "rc"
	return rc
}

// ours is only our key; yk only YuniKorn's; both both.
func ours(info string) map[string]string { return map[string]string{podmeta.AnnotationUserInfo: info} }
func yk(info string) map[string]string   { return map[string]string{podmeta.YuniKornUserInfo: info} }
func both(our, theirs string) map[string]string {
	return map[string]string{podmeta.AnnotationUserInfo: our, podmeta.YuniKornUserInfo: theirs}
}

func TestMutateIdentityThroughControllers(t *testing.T) {
	h := NewHandler(testConfig(t))
	tmpl := []string{"spec", "template"}
	const (
		qs    = "userquota-scheduler"
		stamp = "treated as at creation"
	)
	rcCtl := jobCtl
	rcCtl.Username = "system:serviceaccount:kube-system:replication-controller"
	for _, tc := range []struct {
		name string
		r    review
		at   []string // the pod template (nil: the pod itself)
		// want is each user-info key after the patch ("" absent); checked
		// when the request is allowed.
		want   map[string]string
		denied []string // parts of the refusal; nil when allowed
	}{
		// A ReplicationController's template is stamped like a
		// Deployment's, and a forged one refused (before: RCs were not
		// stamped, and the trusted RC controller copied bob's claim).
		{name: "RC template stamped", r: review{path: PathMutate, op: admissionv1.Create, user: bob, obj: replicationController(qs, nil)},
			at: tmpl, want: ours(bobInfo)},
		{name: "RC forging sue refused", r: review{path: PathMutate, op: admissionv1.Create, user: bob, obj: replicationController(qs, ours(sueInfo))},
			denied: []string{"ReplicationController ns/rc", "you may not set it to " + sueInfo}},
		{name: "RC update keeps its submitter", r: review{path: PathMutate, op: admissionv1.Update, user: bob, obj: replicationController(qs, nil), old: replicationController(qs, ours(sueInfo))},
			at: tmpl, want: ours(sueInfo)},
		{name: "RC enforced: redirected and stamped", r: review{path: PathMutateEnforced, op: admissionv1.Create, user: bob, obj: replicationController("", nil)},
			at: tmpl, want: ours(bobInfo)},

		// Switching a template from another scheduler to ours is a
		// creation: what the old template carried was never checked.
		{name: "switch keeping a forged claim refused", r: review{path: PathMutate, op: admissionv1.Update, user: bob, obj: deployment(qs, ours(sueInfo)), old: deployment("default-scheduler", ours(sueInfo))},
			denied: []string{"Deployment ns/d", stamp, "you may not set it to " + sueInfo}},
		{name: "switch keeping a forged YuniKorn claim refused", r: review{path: PathMutate, op: admissionv1.Update, user: bob, obj: deployment(qs, yk(sueInfo)), old: deployment("default-scheduler", yk(sueInfo))},
			denied: []string{stamp, "annotation " + podmeta.YuniKornUserInfo, "you may not set it to " + sueInfo}},
		{name: "RC switch keeping a forged claim refused", r: review{path: PathMutate, op: admissionv1.Update, user: bob, obj: replicationController(qs, ours(sueInfo)), old: replicationController("volcano", ours(sueInfo))},
			denied: []string{"ReplicationController ns/rc", stamp}},
		{name: "switch dropping the claim stamps the requester", r: review{path: PathMutate, op: admissionv1.Update, user: bob, obj: deployment(qs, nil), old: deployment("default-scheduler", ours(sueInfo))},
			at: tmpl, want: ours(bobInfo)},
		{name: "switch by the claimed user stamps both keys", r: review{path: PathMutate, op: admissionv1.Update, user: sue, obj: deployment(qs, yk(sueInfo)), old: deployment("default-scheduler", yk(sueInfo))},
			at: tmpl, want: both(sueInfo, sueInfo)},
		{name: "switch by a submitter keeps its claim", r: review{path: PathMutate, op: admissionv1.Update, user: argo, obj: deployment(qs, ours(sueInfo)), old: deployment("default-scheduler", ours(sueInfo))},
			at: tmpl, want: ours(sueInfo)},
		{name: "switch by a trusted controller drops the unchecked claim", r: review{path: PathMutate, op: admissionv1.Update, user: rcCtl, obj: replicationController(qs, both(sueInfo, sueInfo)), old: replicationController("default-scheduler", both(sueInfo, sueInfo))},
			at: tmpl, want: map[string]string{}},

		// A namespace labelled enforce after the workload existed: the
		// update that redirects it is a creation too, and a controller
		// creating pods from the unchecked template carries no claim.
		{name: "enforced later: update keeping a forged claim refused", r: review{path: PathMutateEnforced, op: admissionv1.Update, user: bob, obj: deployment("", ours(sueInfo)), old: deployment("", ours(sueInfo))},
			denied: []string{stamp, "you may not set it to " + sueInfo}},
		{name: "enforced later: update keeping a forged YuniKorn claim refused", r: review{path: PathMutateEnforced, op: admissionv1.Update, user: bob, obj: replicationController("default-scheduler", yk(sueInfo)), old: replicationController("default-scheduler", yk(sueInfo))},
			denied: []string{stamp, "annotation " + podmeta.YuniKornUserInfo}},
		{name: "enforced later: update without a claim stamps the requester", r: review{path: PathMutateEnforced, op: admissionv1.Update, user: bob, obj: deployment("", nil), old: deployment("", nil)},
			at: tmpl, want: ours(bobInfo)},
		{name: "enforced later: controller's pod from the unchecked template carries no claim", r: review{path: PathMutateEnforced, op: admissionv1.Create, user: rcCtl, obj: pod("default-scheduler", both(sueInfo, sueInfo))},
			want: map[string]string{}},
		{name: "enforced: controller's pod from a checked template keeps it", r: review{path: PathMutateEnforced, op: admissionv1.Create, user: rcCtl, obj: pod(qs, ours(sueInfo))},
			want: ours(sueInfo)},

		// YuniKorn's key is never the identity on its own: ours is
		// written (or the claim refused), and YuniKorn's made to agree.
		{name: "YuniKorn claim of someone else refused", r: review{path: PathMutate, op: admissionv1.Create, user: bob, obj: pod(qs, yk(sueInfo))},
			denied: []string{"annotation " + podmeta.YuniKornUserInfo, "you may not set it to " + sueInfo}},
		{name: "YuniKorn claim of oneself writes ours", r: review{path: PathMutate, op: admissionv1.Create, user: bob, obj: pod(qs, yk(bobInfo))},
			want: both(bobInfo, bobInfo)},
		{name: "YuniKorn key behind ours made to agree", r: review{path: PathMutate, op: admissionv1.Create, user: bob, obj: pod(qs, both(bobInfo, sueInfo))},
			want: both(bobInfo, bobInfo)},
		{name: "trusted controller's YuniKorn-only pod gets ours", r: review{path: PathMutate, op: admissionv1.Create, user: rcCtl, obj: pod(qs, yk(sueInfo))},
			want: both(sueInfo, sueInfo)},
		{name: "update adding a YuniKorn claim to sue's pod made to agree", r: review{path: PathMutate, op: admissionv1.Update, user: bob, obj: pod(qs, both(sueInfo, bobInfo)), old: pod(qs, ours(sueInfo))},
			want: both(sueInfo, sueInfo)},
		{name: "update of a pod from before the webhook with a YuniKorn claim refused", r: review{path: PathMutate, op: admissionv1.Update, user: bob, obj: pod(qs, yk(sueInfo)), old: pod(qs, yk(sueInfo))},
			denied: []string{"annotation " + podmeta.YuniKornUserInfo, "you may not set it to " + sueInfo}},
		{name: "update of a pod from before the webhook by its YuniKorn user writes ours", r: review{path: PathMutate, op: admissionv1.Update, user: sue, obj: pod(qs, yk(sueInfo)), old: pod(qs, yk(sueInfo))},
			want: both(sueInfo, sueInfo)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, obj := send(t, h, tc.r)
			if tc.denied != nil {
				if resp.Allowed || resp.Result == nil {
					t.Fatalf("allowed (patch %s), want refused with %q", resp.Patch, tc.denied)
				}
				for _, d := range tc.denied {
					if !strings.Contains(resp.Result.Message, d) {
						t.Errorf("refusal %q lacks %q", resp.Result.Message, d)
					}
				}
				if resp.Patch != nil {
					t.Errorf("refusal carries a patch %s", resp.Patch)
				}
				return
			}
			if !resp.Allowed {
				t.Fatalf("refused: %s", resp.Result.Message)
			}
			annotations := lookup(obj, append(tc.at, "metadata", "annotations"))
			for _, key := range podmeta.UserInfoKeys {
				got, _ := annotations[key].(string)
				if want := tc.want[key]; got != want {
					t.Errorf("%s = %q, want %q", key, got, want)
				}
			}
			if got := schedulerOf(obj, tc.at...); got != qs {
				t.Errorf("schedulerName = %q, want %s", got, qs)
			}
		})
	}
}

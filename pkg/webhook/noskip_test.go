package webhook

import (
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
)

// Issue 20, point 2: no skipping the scheduler (docs/security.md). A pod
// of ours that names its node at creation is never checked against its
// quota; only trusted requesters may write one.

// withNode sets spec.nodeName of obj (at path: the pod template) and
// returns obj.
func withNode(obj map[string]any, node string, path ...string) map[string]any {
	lookup(obj, append(path, "spec"))["nodeName"] = node
	return obj
}

func TestRefuseNodeName(t *testing.T) {
	h := NewHandler(testConfig(t))
	const (
		qs  = "userquota-scheduler"
		why = "would skip userquota-scheduler and its quota check"
	)
	tmpl := []string{"spec", "template"}
	trustedByGroup := authenticationv1.UserInfo{Username: "ctl", Groups: []string{"controllers"}}
	for _, tc := range []struct {
		name   string
		r      review
		denied []string // nil: allowed
	}{
		{name: "bob's pod naming a node", r: review{path: PathMutate, op: admissionv1.Create, user: bob, obj: withNode(pod(qs, nil), "node-1")},
			denied: []string{`Pod ns/p: spec.nodeName is set (to "node-1")`, "the pod " + why, "charged even over", `"bob" to be made a trusted user`}},
		{name: "bob's pod naming a node, generateName", r: review{path: PathMutate, op: admissionv1.Create, user: bob, obj: func() map[string]any {
			p := withNode(pod(qs, nil), "node-1")
			m := p["metadata"].(map[string]any)
			delete(m, "name")
			m["generateName"] = "gen-"
			return p
		}()}, denied: []string{"Pod ns/gen-*: spec.nodeName"}},
		{name: "sue claiming herself, naming a node", r: review{path: PathMutate, op: admissionv1.Create, user: sue, obj: withNode(pod(qs, ours(sueInfo)), "node-1")},
			denied: []string{why}},
		{name: "a submitter is not trusted with it", r: review{path: PathMutate, op: admissionv1.Create, user: argo, obj: withNode(pod(qs, ours(bobInfo)), "node-1")},
			denied: []string{why}},
		{name: "enforced namespace: redirected to us, so refused", r: review{path: PathMutateEnforced, op: admissionv1.Create, user: bob, obj: withNode(pod("", nil), "node-1")},
			denied: []string{why}},
		{name: "Deployment template naming a node", r: review{path: PathMutate, op: admissionv1.Create, user: bob, obj: withNode(deployment(qs, nil), "node-1", tmpl...)},
			denied: []string{`Deployment ns/d: spec.template.spec.nodeName is set (to "node-1")`, "the pods made from it " + why}},
		{name: "CronJob template naming a node", r: review{path: PathMutate, op: admissionv1.Create, user: bob, obj: withNode(cronJob(nil), "node-1", "spec", "jobTemplate", "spec", "template")},
			denied: []string{"spec.jobTemplate.spec.template.spec.nodeName"}},
		{name: "Deployment update setting nodeName", r: review{path: PathMutate, op: admissionv1.Update, user: bob,
			obj: withNode(deployment(qs, ours(bobInfo)), "node-1", tmpl...), old: deployment(qs, ours(bobInfo))},
			denied: []string{why}},
		{name: "Deployment update changing nodeName", r: review{path: PathMutate, op: admissionv1.Update, user: bob,
			obj: withNode(deployment(qs, ours(bobInfo)), "node-2", tmpl...), old: withNode(deployment(qs, ours(bobInfo)), "node-1", tmpl...)},
			denied: []string{why}},
		{name: "switch to our scheduler keeping nodeName", r: review{path: PathMutate, op: admissionv1.Update, user: bob,
			obj: withNode(deployment(qs, ours(bobInfo)), "node-1", tmpl...), old: withNode(deployment("other", ours(bobInfo)), "node-1", tmpl...)},
			denied: []string{why}},

		// Allowed.
		{name: "pod without nodeName", r: review{path: PathMutate, op: admissionv1.Create, user: bob, obj: pod(qs, nil)}},
		{name: "another scheduler's pod naming a node", r: review{path: PathMutate, op: admissionv1.Create, user: bob, obj: withNode(pod("default-scheduler", nil), "node-1")}},
		{name: "trusted controller account", r: review{path: PathMutate, op: admissionv1.Create, user: jobCtl, obj: withNode(pod(qs, ours(bobInfo)), "node-1")}},
		{name: "trusted by group", r: review{path: PathMutate, op: admissionv1.Create, user: trustedByGroup, obj: withNode(pod(qs, ours(bobInfo)), "node-1")}},
		{name: "update of a bound pod", r: review{path: PathMutate, op: admissionv1.Update, user: bob,
			obj: withNode(pod(qs, ours(bobInfo)), "node-1"), old: withNode(pod(qs, ours(bobInfo)), "node-1")}},
		{name: "Deployment update keeping nodeName", r: review{path: PathMutate, op: admissionv1.Update, user: bob,
			obj: withNode(deployment(qs, ours(bobInfo)), "node-1", tmpl...), old: withNode(deployment(qs, ours(bobInfo)), "node-1", tmpl...)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, _ := send(t, h, tc.r)
			checkAnswer(t, resp, tc.denied, 403)
		})
	}
}

package webhook

import (
	"fmt"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"

	"github.com/userquota/userquota/pkg/podmeta"
)

// Issue 20, point 3: labels are read once (docs/security.md, "Labels are
// read once"). A bound pod of ours keeps the queue, application id and
// preemptible labels and annotations it was admitted with.

// metaPod is a pod of scheduler carrying sue's user info, bound to node
// unless node is "", with these labels and further annotations.
func metaPod(scheduler, node string, labels, annotations map[string]string) map[string]any {
	all := map[string]string{podmeta.AnnotationUserInfo: sueInfo}
	for k, v := range annotations {
		all[k] = v
	}
	p := pod(scheduler, all)
	if labels != nil {
		p["metadata"].(map[string]any)["labels"] = labels
	}
	if node != "" {
		p["spec"].(map[string]any)["nodeName"] = node
	}
	return p
}

func kv(pairs ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(pairs); i += 2 {
		m[pairs[i]] = pairs[i+1]
	}
	return m
}

func TestRefuseFrozen(t *testing.T) {
	h := NewHandler(testConfig(t))
	const (
		qs   = "userquota-scheduler"
		node = "node-1"
		why  = "Its usage is charged where it was admitted"
	)
	type tc struct {
		name                 string
		path                 string
		user                 *authenticationv1.UserInfo // nil: sue
		oldNode              string
		oldLabels, newLabels map[string]string
		oldAnn, newAnn       map[string]string
		scheduler            string
		denied               []string // nil: allowed
	}
	cases := []tc{
		{name: "queue label relabelled", oldNode: node,
			oldLabels: kv(podmeta.LabelQueue, "root.a"), newLabels: kv(podmeta.LabelQueue, "root.other"),
			denied: []string{"Pod ns/p is bound to node node-1", `label userquota.io/queue from "root.a" to "root.other"`, why}},
		{name: "queue label added", oldNode: node, newLabels: kv(podmeta.LabelQueue, "root.other"),
			denied: []string{`label userquota.io/queue from (absent) to "root.other"`}},
		{name: "queue label removed", oldNode: node, oldLabels: kv(podmeta.LabelQueue, "root.a"), newLabels: kv(),
			denied: []string{`label userquota.io/queue from "root.a" to (absent)`}},
		{name: "queue annotation", oldNode: node, oldAnn: kv(podmeta.LabelQueue, "root.a"), newAnn: kv(podmeta.LabelQueue, "root.b"),
			denied: []string{`annotation userquota.io/queue from "root.a" to "root.b"`}},
		{name: "YuniKorn queue label", oldNode: node, oldLabels: kv(podmeta.YuniKornQueue, "root.a"), newLabels: kv(podmeta.YuniKornQueue, "root.b"),
			denied: []string{`label yunikorn.apache.org/queue from "root.a" to "root.b"`}},
		{name: "YuniKorn queue annotation added", oldNode: node, newAnn: kv(podmeta.YuniKornQueue, "root.b"),
			denied: []string{`annotation yunikorn.apache.org/queue from (absent) to "root.b"`}},
		{name: "queue label of YuniKorn's form", oldNode: node, oldLabels: kv("queue", "root.a"), newLabels: kv("queue", "root.b"),
			denied: []string{`label queue from "root.a" to "root.b"`}},
		{name: "preemptible=false after borrowing", oldNode: node, newLabels: kv(podmeta.LabelPreemptible, "false"),
			denied: []string{`label userquota.io/preemptible from (absent) to "false"`, why}},
		{name: "preemptible=true changed to FALSE", oldNode: node, oldLabels: kv(podmeta.LabelPreemptible, "true"), newLabels: kv(podmeta.LabelPreemptible, "FALSE"),
			denied: []string{`label userquota.io/preemptible from "true" to "FALSE"`}},
		{name: "two keys at once, both named", oldNode: node, oldLabels: kv(podmeta.LabelQueue, "root.a", podmeta.LabelAppID, "x"),
			newLabels: kv(podmeta.LabelQueue, "root.b", podmeta.LabelAppID, "y"),
			denied:    []string{`label userquota.io/app-id from "x" to "y"; label userquota.io/queue from "root.a" to "root.b"`}},
		{name: "trusted controller refused too", user: &jobCtl, oldNode: node,
			oldLabels: kv(podmeta.LabelQueue, "root.a"), newLabels: kv(podmeta.LabelQueue, "root.b"),
			denied: []string{"label userquota.io/queue"}},
		{name: "submitter refused too", user: &argo, oldNode: node,
			newLabels: kv(podmeta.LabelPreemptible, "false"), denied: []string{"label userquota.io/preemptible"}},
		{name: "enforced namespace", path: PathMutateEnforced, oldNode: node,
			oldLabels: kv(podmeta.LabelQueue, "root.a"), newLabels: kv(podmeta.LabelQueue, "root.b"),
			denied: []string{"label userquota.io/queue"}},

		// Allowed.
		{name: "not bound yet: the scheduler reads them at admission",
			oldLabels: kv(podmeta.LabelQueue, "root.a"), newLabels: kv(podmeta.LabelQueue, "root.b", podmeta.LabelPreemptible, "false")},
		{name: "other labels of a bound pod", oldNode: node,
			oldLabels: kv(podmeta.LabelQueue, "root.a", "team", "x"), newLabels: kv(podmeta.LabelQueue, "root.a", "team", "y", "new", "1")},
		{name: "same values, another annotation changes", oldNode: node,
			oldLabels: kv(podmeta.LabelQueue, "root.a", podmeta.LabelPreemptible, "false"), newLabels: kv(podmeta.LabelQueue, "root.a", podmeta.LabelPreemptible, "false"),
			newAnn: kv("note", "x")},
		{name: "annotation queue is not read, so not frozen", oldNode: node, newAnn: kv("queue", "root.b")},
		{name: "another scheduler's bound pod", scheduler: "default-scheduler", oldNode: node,
			oldLabels: kv(podmeta.LabelQueue, "root.a"), newLabels: kv(podmeta.LabelQueue, "root.b")},
	}
	// Every application id key, as label and as annotation.
	for _, k := range podmeta.AppIDKeys {
		cases = append(cases,
			tc{name: "app id label " + k, oldNode: node, oldLabels: kv(k, "a1"), newLabels: kv(k, "a2"),
				denied: []string{fmt.Sprintf(`label %s from "a1" to "a2"`, k), why}},
			tc{name: "app id annotation " + k, oldNode: node, newAnn: kv(k, "a2"),
				denied: []string{fmt.Sprintf(`annotation %s from (absent) to "a2"`, k)}})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sched := c.scheduler
			if sched == "" {
				sched = qs
			}
			path := c.path
			if path == "" {
				path = PathMutate
			}
			user := sue
			if c.user != nil {
				user = *c.user
			}
			old := metaPod(sched, c.oldNode, c.oldLabels, c.oldAnn)
			obj := metaPod(sched, c.oldNode, c.newLabels, c.newAnn)
			resp, _ := send(t, h, review{path: path, op: admissionv1.Update, user: user, obj: obj, old: old})
			checkAnswer(t, resp, c.denied, 403)
		})
	}
}

// TestFrozenKeysAreReadOnes: every key the scheduler reads for the queue,
// the application and preemption is frozen, in the places it reads it.
func TestFrozenKeysAreReadOnes(t *testing.T) {
	got := map[string]bool{}
	for _, k := range frozenKeys {
		got[k.String()] = true
	}
	want := []string{"annotation " + podmeta.LabelQueue, "label " + podmeta.LabelQueue,
		"annotation " + podmeta.YuniKornQueue, "label " + podmeta.YuniKornQueue, "label queue",
		"label " + podmeta.LabelPreemptible}
	for _, k := range podmeta.AppIDKeys {
		want = append(want, "label "+k, "annotation "+k)
	}
	for _, w := range want {
		if !got[w] {
			t.Errorf("%s is not frozen", w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("frozen keys %v, want exactly %v", got, want)
	}
}

// TestRefuseFrozenTrees: a bound pod's quota tree labels (any key under
// tree.userquota.io/) are read-only like its queue label: changed, added
// or removed, refused naming each; a pod not bound yet may change them,
// and other labels of a bound pod change as usual.
func TestRefuseFrozenTrees(t *testing.T) {
	h := NewHandler(testConfig(t))
	gpu, proj := podmeta.TreeLabel("gpu"), podmeta.TreeLabel("project")
	for _, c := range []struct {
		name                 string
		node                 string
		oldLabels, newLabels map[string]string
		denied               []string
	}{
		{name: "relabelled", node: "node-1", oldLabels: kv(gpu, "h100-org1"), newLabels: kv(gpu, "a100-org1"),
			denied: []string{"Pod ns/p is bound to node node-1", "quota tree labels", `label tree.userquota.io/gpu from "h100-org1" to "a100-org1"`, "charged where it was admitted"}},
		{name: "added and removed", node: "node-1", oldLabels: kv(gpu, "h100-org1"), newLabels: kv(proj, "p1"),
			denied: []string{`label tree.userquota.io/gpu from "h100-org1" to (absent); label tree.userquota.io/project from (absent) to "p1"`}},
		{name: "with the queue label", node: "node-1", oldLabels: kv(gpu, "x", podmeta.LabelQueue, "root.a"), newLabels: kv(gpu, "y", podmeta.LabelQueue, "root.b"),
			denied: []string{`label tree.userquota.io/gpu from "x" to "y"`, `label userquota.io/queue from "root.a" to "root.b"`}},
		{name: "not bound yet", oldLabels: kv(gpu, "h100-org1"), newLabels: kv(gpu, "a100-org1")},
		{name: "other labels", node: "node-1", oldLabels: kv(gpu, "h100-org1", "team", "a"), newLabels: kv(gpu, "h100-org1", "team", "b")},
	} {
		t.Run(c.name, func(t *testing.T) {
			old := metaPod("userquota-scheduler", c.node, c.oldLabels, nil)
			obj := metaPod("userquota-scheduler", c.node, c.newLabels, nil)
			resp, _ := send(t, h, review{path: PathMutate, op: admissionv1.Update, user: sue, obj: obj, old: old})
			checkAnswer(t, resp, c.denied, 403)
		})
	}
}

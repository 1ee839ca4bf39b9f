package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/userquota/userquota/pkg/hold"
	"github.com/userquota/userquota/pkg/rest/dao"
)

// whyHops bounds how many pods a wait violation's report follows: the
// pod, then the pod the scheduler says it waits behind.
const whyHops = 2

// explainWait is what the leading scheduler says of a pod that broke the
// wait invariant (GET the why endpoint), and of the pod it says the pod
// waits behind. The checker reads pod statuses, which the status writer
// (20 writes a second, 1 while pods bind) may not have caught up with;
// the scheduler's own answer, checked now, tells a pod held by policy
// from a lost let-in.
func (r *runner) explainWait(ns, name string) string {
	var b strings.Builder
	for range whyHops {
		line, ahead := r.why(ns, name)
		fmt.Fprintf(&b, "\n  the scheduler says of %s/%s: %s", ns, name, line)
		if ahead == "" {
			break
		}
		ns, name, _ = strings.Cut(ahead, "/")
	}
	return b.String()
}

// explainPending is explainWait for the first few of pods (namespace/name),
// pending pods that fit, for a quiet check's report.
func (r *runner) explainPending(pods []string) string {
	var b strings.Builder
	for i, p := range pods {
		if i == whyPending {
			fmt.Fprintf(&b, "\n  (and %d more)", len(pods)-i)
			break
		}
		ns, name, _ := strings.Cut(p, "/")
		b.WriteString(r.explainWait(ns, name))
	}
	return b.String()
}

// whyPending bounds how many pending pods a quiet check's report asks
// the scheduler about.
const whyPending = 5

// why asks the leader about one pod: a line for the report, and the
// namespace/name of the pod it waits behind ("" when none).
func (r *runner) why(ns, name string) (line, ahead string) {
	body, fail := r.whyBody(ns, name)
	if fail != "" {
		return fail, ""
	}
	return whyLine(body)
}

// heldNow is the leader's answer of why ns/name is held, checked now; nil
// when it gave none or the pod is not held.
func (r *runner) heldNow(ns, name string) *dao.HeldExplanation {
	body, fail := r.whyBody(ns, name)
	var e dao.PodExplanation
	if fail != "" || json.Unmarshal(body, &e) != nil {
		return nil
	}
	return e.Held
}

// whyBody GETs the leader's explanation of one pod; fail says why there is
// none.
func (r *runner) whyBody(ns, name string) (body []byte, fail string) {
	leader := r.c.leader()
	if leader == nil {
		return nil, "no leader to ask"
	}
	path := strings.NewReplacer("{partition}", "default", "{namespace}", ns, "{name}", name).Replace(dao.WhyPath)
	code, body, err := r.c.restGet(leader, path)
	switch {
	case err != nil:
		return nil, fmt.Sprintf("GET %s: %v", path, err)
	case code != http.StatusOK:
		return nil, fmt.Sprintf("GET %s: HTTP %d: %.300s", path, code, body)
	}
	return body, ""
}

// behindClaim asks the leader whether ns/name is held behind another pod
// and, if so, that pod's own reason, checked now (history.askBehind).
func (r *runner) behindClaim(ns, name string) behindClaim {
	h := r.heldNow(ns, name)
	if h == nil || heldBehind(h) == "" {
		return behindClaim{}
	}
	c := behindClaim{ahead: heldBehind(h)}
	ans, aname, _ := strings.Cut(c.ahead, "/")
	if a := r.heldNow(ans, aname); a != nil {
		c.reason = a.Reason
	}
	return c
}

// whyLine renders a PodExplanation for a violation's report.
func whyLine(body []byte) (line, ahead string) {
	var e dao.PodExplanation
	if err := json.Unmarshal(body, &e); err != nil {
		return fmt.Sprintf("unreadable answer (%v): %.300s", err, body), ""
	}
	line = fmt.Sprintf("%s: %s", e.State, e.Message)
	h := e.Held
	if h == nil {
		return line, ""
	}
	line += fmt.Sprintf(" [held %s since %s, %d of %d held in its queue; reason checked now: %s]",
		h.Kind, h.Since.UTC().Format("15:04:05.000"), h.Position, h.QueueHeld, h.Reason)
	return line, heldBehind(h)
}

// heldBehind is the namespace/name of the pod a hold keeps its pod behind
// ("" when it is held by something else).
func heldBehind(h *dao.HeldExplanation) string {
	if h.Kind != string(hold.KindBehind) {
		return ""
	}
	_, rest, ok := strings.Cut(h.Reason, hold.BehindPrefix)
	if !ok {
		return ""
	}
	ahead, _, _ := strings.Cut(rest, ",")
	return ahead
}

package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/rest/dao"
)

// defaultSchedulerName is the scheduler profile's name in the manifests.
const defaultSchedulerName = "userquota-scheduler"

// envServer names the environment variable that gives --server's default.
const envServer = "USERQUOTA_SERVER"

// kubeFlags say how to reach the Kubernetes API, as kubectl's do.
type kubeFlags struct {
	kubeconfig, context, namespace string
}

// kube is the Kubernetes API as the caller's kubeconfig reaches it.
type kube struct {
	client kubernetes.Interface
	// namespace is the one to use: the flag's, else the context's, else
	// "default".
	namespace string
	// config carries the caller's credentials, sent to the REST API
	// when no token is given.
	config *rest.Config
}

// kubeLoader reaches the Kubernetes API as the flags say (loadKube; tests
// fake it).
type kubeLoader func(kubeFlags) (*kube, error)

// loadKube loads the kubeconfig as kubectl does: --kubeconfig, else
// $KUBECONFIG, else ~/.kube/config; --context; --namespace over the
// context's.
func loadKube(f kubeFlags) (*kube, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if f.kubeconfig != "" {
		rules.ExplicitPath = f.kubeconfig
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: f.context}
	overrides.Context.Namespace = f.namespace
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, err
	}
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &kube{client: client, namespace: ns, config: cfg}, nil
}

// serverFlags are the REST API's flags of why and held.
type serverFlags struct {
	usageFlags
	kube kubeFlags
}

// register adds the flags to fs.
func (f *serverFlags) register(fs *flag.FlagSet) {
	f.registerConn(fs)
	fs.StringVar(&f.kube.kubeconfig, "kubeconfig", "", "")
	fs.StringVar(&f.kube.context, "context", "", "")
	fs.StringVar(&f.output, "o", "", "")
	fs.StringVar(&f.output, "output", "", "")
}

// check returns what is wrong with the flags ("" when nothing).
func (f *serverFlags) check(cmd string, outputs ...string) string {
	if msg := f.checkConn(cmd); msg != "" {
		return msg
	}
	if f.output == "" {
		f.output = outputs[0]
	}
	for _, o := range outputs {
		if f.output == o {
			return ""
		}
	}
	return fmt.Sprintf("%s: -o must be %s, not %q", cmd, strings.Join(outputs, " or "), f.output)
}

// client returns the REST API's client; with k, requests without a token
// carry the kubeconfig's credentials.
func (f *serverFlags) client(k *kube) (*usageClient, error) {
	uf := f.usageFlags
	if k != nil && k.config != nil {
		cfg := k.config
		uf.wrap = func(rt http.RoundTripper) (http.RoundTripper, error) { return rest.HTTPWrappersForConfig(cfg, rt) }
	}
	return newUsageClient(uf)
}

// why is `userquotactl why POD [-n NS]`: the pod is read through the
// Kubernetes API as the caller (so a namespace they may not read stays
// closed, and another scheduler's pod is told apart there), then the
// scheduler explains it.
func (c *cli) why(args []string) int {
	var f serverFlags
	fs := newFlagSet("why")
	f.register(fs)
	fs.StringVar(&f.kube.namespace, "n", "", "")
	fs.StringVar(&f.kube.namespace, "namespace", "", "")
	scheduler := fs.String("scheduler-name", defaultSchedulerName, "")
	if code, ok := c.parseFlags(fs, interspersed(fs, args)); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return c.badArgs(fmt.Sprintf("why takes one POD, got %d arguments", fs.NArg()))
	}
	if msg := f.check("why", "text", "json"); msg != "" {
		return c.badArgs(msg)
	}
	name := strings.TrimPrefix(strings.TrimPrefix(fs.Arg(0), "pod/"), "pods/")
	k, err := c.kube(f.kube)
	if err != nil {
		c.errorf("cannot reach the Kubernetes API: %v", err)
		return exitFailed
	}
	ns := k.namespace
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	pod, err := k.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		c.errorf("pod %q not found in namespace %q", name, ns)
		return exitFailed
	case apierrors.IsForbidden(err):
		c.errorf("you may not read pods in namespace %q", ns)
		return exitFailed
	case apierrors.IsUnauthorized(err):
		c.errorf("the Kubernetes API does not accept your credentials")
		return exitFailed
	case err != nil:
		c.errorf("cannot read pod %s/%s: %v", ns, name, err)
		return exitFailed
	}
	if pod.Spec.SchedulerName != *scheduler {
		c.errorf("pod %s/%s is not scheduled by %s (its schedulerName is %q): no quota of ours holds it", ns, name, *scheduler, pod.Spec.SchedulerName)
		return exitFailed
	}
	rc, err := f.client(k)
	if err != nil {
		c.errorf("%v", err)
		return exitFailed
	}
	path := "/ws/v1/partition/" + url.PathEscape(f.partition) + "/why/" + url.PathEscape(ns) + "/" + url.PathEscape(name)
	body, err := rc.get(path)
	if err != nil {
		c.errorf("%s", oneLineError(err))
		return exitFailed
	}
	if f.output == "json" {
		err = printJSON(c.stdout, body)
	} else {
		var e dao.PodExplanation
		if err = json.Unmarshal(body, &e); err == nil {
			err = printWhy(c.stdout, &e, pod, c.clock())
		}
	}
	if err != nil {
		c.errorf("%v", err)
		return exitFailed
	}
	return exitOK
}

// oneLineError is the server's message alone when it answered one (the
// request and status are noise for the one-line answer of why), else the
// error.
func oneLineError(err error) string {
	var e *apiError
	if errors.As(err, &e) && e.Message != "" {
		switch e.code {
		case http.StatusUnauthorized:
			return "the scheduler's REST API does not accept your credentials: " + e.Description
		case http.StatusForbidden:
			return e.Message
		}
		return e.Message
	}
	return err.Error()
}

// held is `userquotactl held QUEUE`: a queue's held pods in let-in order.
func (c *cli) held(args []string) int {
	var f serverFlags
	fs := newFlagSet("held")
	f.register(fs)
	offset := fs.Int("offset", 0, "")
	limit := fs.Int("limit", 100, "")
	if code, ok := c.parseFlags(fs, interspersed(fs, args)); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return c.badArgs(fmt.Sprintf("held takes one QUEUE, got %d arguments", fs.NArg()))
	}
	if msg := f.check("held", "table", "json"); msg != "" {
		return c.badArgs(msg)
	}
	var k *kube
	if f.token == "" && f.tokenFile == "" {
		// The kubeconfig's credentials, when it has any.
		k, _ = c.kube(f.kube)
	}
	rc, err := f.client(k)
	if err != nil {
		c.errorf("%v", err)
		return exitFailed
	}
	queue := fs.Arg(0)
	path := fmt.Sprintf("/ws/v1/partition/%s/queue/%s/held?offset=%d&limit=%d", url.PathEscape(f.partition), url.PathEscape(queue), *offset, *limit)
	body, err := rc.get(path)
	if err != nil {
		c.errorf("%s", oneLineError(err))
		return exitFailed
	}
	if f.output == "json" {
		err = printJSON(c.stdout, body)
	} else {
		var h dao.HeldPods
		if err = json.Unmarshal(body, &h); err == nil {
			err = printHeld(c.stdout, &h, c.clock())
		}
	}
	if err != nil {
		c.errorf("%v", err)
		return exitFailed
	}
	return exitOK
}

// clock is the time now (fixed in tests).
func (c *cli) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

// interspersed reorders args so that flags after the positional
// arguments are parsed too, as kubectl's are (`why POD -n NS`): the flag
// package stops at the first non-flag.
func interspersed(fs *flag.FlagSet, args []string) []string {
	var flags, rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			rest = append(rest, args[i+1:]...)
			return append(append(flags, "--"), rest...)
		case strings.HasPrefix(a, "-") && a != "-":
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if strings.Contains(name, "=") {
				continue
			}
			if fl := fs.Lookup(name); fl != nil && i+1 < len(args) {
				if b, ok := fl.Value.(interface{ IsBoolFlag() bool }); !ok || !b.IsBoolFlag() {
					i++
					flags = append(flags, args[i])
				}
			}
		default:
			rest = append(rest, a)
		}
	}
	return append(append(flags, "--"), rest...)
}

// amount formats v of resource name in its unit ("2", "1Gi", "500m").
func amount(name string, v int64) string {
	if name == "" {
		return fmt.Sprint(v)
	}
	return resources.FormatValue(resources.Intern(name), v)
}

// vector formats a request: "cpu 1, memory 2Gi, pods 1", by name.
func vector(m map[string]int64) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, n+" "+amount(n, m[n]))
	}
	return strings.Join(parts, ", ")
}

// ago says how long ago t was (span).
func ago(now, t time.Time) string { return span(now.Sub(t)) }

// span says how long d is, to the second under 10 minutes, else to the
// minute: "45s", "1m38s", "23m", "2h5m".
func span(d time.Duration) string {
	switch {
	case d < 10*time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Round(time.Minute)/time.Minute))
	}
	d = d.Round(time.Minute)
	return fmt.Sprintf("%dh%dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
}

// printWhy prints an explanation as `kubectl describe` lays out fields.
func printWhy(w io.Writer, e *dao.PodExplanation, pod *v1.Pod, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	line := func(k, format string, args ...any) {
		fmt.Fprintf(tw, "%s:\t%s\n", k, printable(fmt.Sprintf(format, args...), false))
	}
	line("Pod", "%s", e.Pod)
	if e.User != "" {
		line("User", "%s", e.User)
	}
	if e.Queue != "" {
		line("Queue", "%s", e.Queue)
	}
	if len(e.Request) > 0 {
		line("Request", "%s", vector(e.Request))
	}
	switch {
	case e.Held != nil:
		printHeldExplanation(tw, line, e.Held, e.Queue, now)
	case e.Charged != nil:
		printCharge(tw, line, e, pod)
	default:
		line("State", "%s", e.State)
	}
	line("Why", "%s", e.Message)
	return tw.Flush()
}

func printHeldExplanation(tw io.Writer, line func(k, format string, args ...any), h *dao.HeldExplanation, queue string, now time.Time) {
	line("State", "Held by quota (%sLimit) since %s (%s ago)", h.Kind, h.Since.UTC().Format(time.RFC3339), ago(now, h.Since))
	line("Held by", "%s", h.Reason)
	if l := h.Limit; l != nil {
		switch l.Limit {
		case "applications":
			line("Limit", "%s %s's maxapplications in %s: %d running + %d > %d", l.Who, l.Name, l.Queue, l.Usage, l.Request, l.Max)
		default:
			admitted := ""
			if l.Admitted > 0 {
				admitted = fmt.Sprintf(" (%s of it let in, not running yet)", amount(l.Resource, l.Admitted))
			}
			who := fmt.Sprintf("%s %s in %s", l.Who, l.Name, l.Queue)
			if l.Who == "queue" {
				who = "queue " + l.Queue
			}
			max := "max"
			switch l.Limit {
			case "share":
				max = "its share now"
			case "guaranteed":
				max = "guaranteed (for non-preemptible pods)"
			}
			line("Limit", "%s, %s: %s used%s + %s asked > %s %s", who, l.Resource,
				amount(l.Resource, l.Usage), admitted, amount(l.Resource, l.Request), amount(l.Resource, l.Max), max)
		}
	}
	if h.Gang != "" {
		line("Gang", "%s: its whole minimum waits to fit at once", h.Gang)
	}
	if h.Position > 0 {
		line("Place", "%d of %d held in %s, in let-in order (priority, the queue's application order, age)", h.Position, h.QueueHeld, queue)
	}
	if l := h.LetIn; l != nil {
		what := func(v int64) string {
			if l.Resource == "" {
				return fmt.Sprintf("%d application(s)", v)
			}
			return amount(l.Resource, v) + " " + l.Resource
		}
		need := l.Own + l.Ahead
		ahead := "no pod is held ahead of it on the limit"
		switch {
		case l.AheadPods == 1:
			ahead = "1 pod held ahead of it on the limit asks " + what(l.Ahead)
		case l.AheadPods > 1:
			ahead = fmt.Sprintf("%d pods held ahead of it on the limit ask %s", l.AheadPods, what(l.Ahead))
		}
		line("Let in", "once %s is released on this limit (this pod alone needs %s; %s)", what(need), what(l.Own), ahead)
		first := true
		for _, x := range l.Holders {
			k := ""
			if first {
				k, first = "Holding it", false
			}
			who := x.Pod
			if x.User != "" {
				who += " (" + x.User + ")"
			}
			if x.Pod == dao.Hidden {
				who = fmt.Sprintf("%d pod(s) of other users", x.Pods)
			} else if x.Pods > 1 {
				who += fmt.Sprintf(", %d pods", x.Pods)
			}
			if l.Resource != "" {
				who += ": " + what(x.Amount)
			}
			fmt.Fprintf(tw, "%s\t%s\n", colon(k), printable(who, false))
		}
		if l.MoreHolders > 0 {
			fmt.Fprintf(tw, "\t%d more: %s\n", l.MoreHolders, what(l.MoreAmount))
		}
	}
	est := h.Estimate
	if est.Known {
		wait := time.Duration(est.WaitSeconds) * time.Second
		line("When", "in about %s (around %s), from %s freed by %d completion(s) on this limit over the last %s",
			span(wait), est.At.Add(wait).UTC().Format("15:04 MST"), freed(h, est), est.Completions, span(time.Duration(est.SpanSeconds)*time.Second))
	} else {
		line("When", "cannot be estimated: %s", est.Unknown)
	}
	a := est.Accuracy
	where := fmt.Sprintf("%d estimates compared in %s by this scheduler", a.Compared, a.Scope)
	if a.Scope == "simulator" {
		where = fmt.Sprintf("%d estimates on the simulator's reference trace %s, docs/why-pending.md; this scheduler has not compared enough of its own yet", a.Compared, a.Reference)
	}
	line("Accuracy", "half of such estimates were off by at most %s, nine in ten by at most %s (%s)",
		span(time.Duration(a.P50Seconds)*time.Second), span(time.Duration(a.P90Seconds)*time.Second), where)
}

// freed formats what the completions freed, in the limit's resource.
func freed(h *dao.HeldExplanation, est dao.Estimate) string {
	if h.LetIn == nil || h.LetIn.Resource == "" {
		return fmt.Sprint(est.Freed)
	}
	return amount(h.LetIn.Resource, est.Freed) + " " + h.LetIn.Resource
}

// colon is k with its colon, or nothing for a continuation line.
func colon(k string) string {
	if k == "" {
		return ""
	}
	return k + ":"
}

func printCharge(tw io.Writer, line func(k, format string, args ...any), e *dao.PodExplanation, pod *v1.Pod) {
	ch := e.Charged
	node := ""
	if pod != nil {
		node = " on " + pod.Spec.NodeName
	}
	line("State", "%s%s", e.State, node)
	to := fmt.Sprintf("user %s", ch.User)
	if ch.Group != "" {
		to += ", group " + ch.Group
	}
	to += ", queue " + ch.Queue + ", application " + ch.Application
	if ch.Forced {
		to += " (charged as found running: not checked against the limits)"
	}
	line("Charged to", "%s", to)
	switch {
	case !ch.Elastic:
		line("Borrows", "no: no queue on its path has elastic quota (nothing is lent to it)")
	case len(ch.Borrowing) == 0:
		line("Borrows", "no: its queues use no more than their guaranteed shares of what it holds")
	}
	for i, b := range ch.Borrowing {
		k := ""
		if i == 0 {
			k = "Borrows"
		}
		share := "unbounded"
		if b.Share >= 0 {
			share = amount(b.Resource, b.Share)
		}
		over := ""
		if b.OverShare {
			over = ", over its share"
		}
		fmt.Fprintf(tw, "%s\t%s\n", colon(k), printable(fmt.Sprintf("%s uses %s %s, guaranteed %s, share now %s%s",
			b.Queue, amount(b.Resource, b.Usage), b.Resource, amount(b.Resource, b.Guaranteed), share, over), false))
	}
	switch {
	case !ch.Preemptible:
		line("Reclaim", "never: it is not preemptible (userquota.io/preemptible: \"false\")")
	case ch.Reclaimable:
		line("Reclaim", "yes: a queue on its path uses more than its share of what it holds, so a pod of a queue within its share that finds no node may preempt it (docs/reclaim.md)")
	case len(ch.Borrowing) > 0:
		line("Reclaim", "not now: its queues are within their shares; when the lending queues want their capacity back, their shares grow, and then it may be preempted")
	default:
		line("Reclaim", "no: it uses no lent capacity (a pod of higher priority in its own queue may still preempt it, as kube-scheduler's preemption would)")
	}
}

// printHeld prints a queue's held pods as a table.
func printHeld(w io.Writer, h *dao.HeldPods, now time.Time) error {
	if h.Total == 0 {
		_, err := fmt.Fprintf(w, "no pod is held by quota in %s\n", printable(h.Queue, false))
		return err
	}
	last := h.Offset + len(h.Pods)
	fmt.Fprintf(w, "%s: %d held by quota, in let-in order", printable(h.Queue, false), h.Total)
	if len(h.Pods) < h.Total {
		fmt.Fprintf(w, " (%d-%d shown)", h.Offset+1, last)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tPOD\tUSER\tPRIORITY\tHELD FOR\tKIND\tREQUEST\tREASON")
	for _, p := range h.Pods {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", p.Position, printable(p.Pod, false), printable(p.User, false), p.Priority,
			ago(now, p.Since), p.Kind, printable(vector(p.Request), false), printable(p.Reason, false))
	}
	return tw.Flush()
}

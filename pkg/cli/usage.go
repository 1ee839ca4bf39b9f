package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/rest/dao"
	"github.com/userquota/userquota/pkg/ugm"
)

// hotPercent: a node at or over it is marked, as on the usage page.
const hotPercent = 90

// usageFlags are the flags of `userquotactl usage`.
type usageFlags struct {
	server, partition, user, group, output string
	token, tokenFile, caFile, serverName   string
	insecure, me                           bool
	timeout                                time.Duration
	// base is --server parsed (checkConn).
	base *url.URL
	// wrap, when set, adds the caller's credentials to requests sent
	// without --token or --token-file (why and held: the kubeconfig's).
	wrap func(http.RoundTripper) (http.RoundTripper, error)
}

// usageCmd is `userquotactl usage`: it reads the scheduler's usage REST API
// and prints the usage trees as tables (-o tree) or the server's JSON.
func (c *cli) usageCmd(args []string) int {
	if len(args) > 0 && args[0] == "report" {
		return c.usageReport(args[1:])
	}
	stdout := c.stdout
	var f usageFlags
	fs := newFlagSet("usage")
	f.registerConn(fs)
	fs.StringVar(&f.user, "user", "", "")
	fs.StringVar(&f.group, "group", "", "")
	fs.BoolVar(&f.me, "me", false, "")
	fs.StringVar(&f.output, "o", "tree", "")
	fs.StringVar(&f.output, "output", "tree", "")
	if code, ok := c.parseFlags(fs, args); !ok {
		return code
	}
	switch {
	case fs.NArg() > 0:
		return c.badArgs(fmt.Sprintf("usage: unexpected argument %q", fs.Arg(0)))
	case f.user != "" && f.group != "":
		return c.badArgs("usage: --user and --group exclude each other")
	case f.me && (f.user != "" || f.group != ""):
		return c.badArgs("usage: --me excludes --user and --group")
	case f.output != "tree" && f.output != "json":
		return c.badArgs(fmt.Sprintf("usage: -o must be tree or json, not %q", f.output))
	}
	if msg := f.checkConn("usage"); msg != "" {
		return c.badArgs(msg)
	}
	uc, err := newUsageClient(f)
	if err != nil {
		c.errorf("%s", err.Error())
		return exitFailed
	}
	prefix := "/ws/v1/partition/" + url.PathEscape(f.partition) + "/usage/"
	switch {
	case f.me:
		err = uc.usage(stdout, f.output, prefix+"me", decoded(stdout, printSelf))
	case f.user != "":
		err = uc.usage(stdout, f.output, prefix+"user/"+url.PathEscape(f.user), decoded(stdout, printUser))
	case f.group != "":
		err = uc.usage(stdout, f.output, prefix+"group/"+url.PathEscape(f.group), decoded(stdout, printGroup))
	default:
		err = uc.all(stdout, f.output, prefix)
	}
	if err != nil {
		c.errorf("%s", err.Error())
		return exitFailed
	}
	return exitOK
}

// usageClient reads the REST API.
type usageClient struct {
	base  *url.URL
	token string
	http  *http.Client
}

func newUsageClient(f usageFlags) (*usageClient, error) {
	c := &usageClient{base: f.base, token: f.token}
	if f.tokenFile != "" {
		b, err := os.ReadFile(f.tokenFile)
		if err != nil {
			return nil, err
		}
		c.token = strings.TrimSpace(string(b))
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: f.insecure, ServerName: f.serverName} //nolint:gosec // asked for by flag
	if f.caFile != "" {
		pem, err := os.ReadFile(f.caFile)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: no PEM certificate found", f.caFile)
		}
		tlsConfig.RootCAs = pool
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsConfig
	var rt http.RoundTripper = tr
	if f.wrap != nil && c.token == "" {
		// The kubeconfig's credentials: a token, a token file, an exec
		// plugin's token.
		var werr error
		if rt, werr = f.wrap(rt); werr != nil {
			return nil, fmt.Errorf("your kubeconfig's credentials: %w", werr)
		}
	}
	c.http = &http.Client{Timeout: f.timeout, Transport: rt}
	return c, nil
}

// get returns the body of a 200 answer; any other status is an error with
// the server's message.
func (c *usageClient) get(path string) ([]byte, error) {
	u := *c.base
	path, u.RawQuery, _ = strings.Cut(path, "?")
	u.RawPath = c.base.EscapedPath() + path
	u.Path, _ = url.PathUnescape(u.RawPath)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u.String(), err)
	}
	if resp.StatusCode != http.StatusOK {
		e := &apiError{url: u.String(), status: resp.Status, code: resp.StatusCode}
		if json.Unmarshal(body, e) != nil || e.Message == "" {
			e.Message, e.Description = strings.TrimSpace(string(body)), ""
		}
		return nil, e
	}
	return body, nil
}

// apiError is an answer of the REST API other than 200, with the
// server's message (docs/api.md, "Errors").
type apiError struct {
	url, status string
	code        int
	Message     string `json:"message"`
	Description string `json:"description"`
}

// Error says which request failed, its status and the server's message
// and description.
func (e *apiError) Error() string {
	msg := e.Message
	if e.Description != "" && e.Description != e.Message {
		msg += ": " + e.Description
	}
	return fmt.Sprintf("GET %s: %s: %s", e.url, e.status, msg)
}

// usage prints one user or group: the server's JSON, or the table.
func (c *usageClient) usage(stdout io.Writer, output, path string, table func([]byte) error) error {
	body, err := c.get(path)
	if err != nil {
		return err
	}
	if output == "json" {
		return printJSON(stdout, body)
	}
	return table(body)
}

// all prints the queues, every user and every group.
func (c *usageClient) all(stdout io.Writer, output, prefix string) error {
	bodies := map[string][]byte{}
	for _, kind := range []string{"queues", "users", "groups"} {
		b, err := c.get(prefix + kind)
		if err != nil {
			return err
		}
		bodies[kind] = b
	}
	if output == "json" {
		all := fmt.Sprintf(`{"queues":%s,"users":%s,"groups":%s}`,
			bytes.TrimSpace(bodies["queues"]), bytes.TrimSpace(bodies["users"]), bytes.TrimSpace(bodies["groups"]))
		return printJSON(stdout, []byte(all))
	}
	var queues *ugm.QueueUsage
	var users []ugm.UserUsage
	var groups []ugm.GroupUsage
	for kind, v := range map[string]any{"queues": &queues, "users": &users, "groups": &groups} {
		if err := json.Unmarshal(bodies[kind], v); err != nil {
			return fmt.Errorf("reading %s: %w", kind, err)
		}
	}
	seen := printTree(stdout, "queues (all users, against each queue's own max)", queues)
	for _, u := range users {
		fmt.Fprintln(stdout)
		seen = seen.or(printUserTree(stdout, u))
	}
	for _, g := range groups {
		fmt.Fprintln(stdout)
		seen = seen.or(printGroupTree(stdout, g))
	}
	if len(users) == 0 {
		fmt.Fprintln(stdout, "\nno user has running pods")
	}
	legend(stdout, seen)
	return nil
}

func printJSON(w io.Writer, body []byte) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, body, "", "  "); err != nil {
		return fmt.Errorf("the server's answer is not JSON: %w", err)
	}
	buf.WriteByte('\n')
	_, err := io.WriteString(w, printable(buf.String(), true))
	return err
}

// decoded returns a printer of a JSON answer: it decodes the body as a T
// and prints it to w with print.
func decoded[T any](w io.Writer, print func(io.Writer, T) error) func([]byte) error {
	return func(body []byte) error {
		var v T
		if err := json.Unmarshal(body, &v); err != nil {
			return err
		}
		return print(w, v)
	}
}

// printSelf prints the caller's own usage (/usage/me): who the server
// took them for, their tree, and their groups' trees.
func printSelf(w io.Writer, me dao.SelfUsage) error {
	groups := "no groups"
	if len(me.Groups) > 0 {
		groups = "groups " + strings.Join(me.Groups, ", ")
	}
	fmt.Fprintln(w, printable("you are "+me.UserName+" ("+groups+")", false))
	fmt.Fprintln(w)
	seen := printUserTree(w, me.User)
	for _, g := range me.GroupUsage {
		fmt.Fprintln(w)
		seen = seen.or(printGroupTree(w, g))
	}
	if len(me.GroupUsage) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "group usage is every member's; %s are other users' applications and gangs\n", dao.Hidden)
	}
	legend(w, seen)
	return nil
}

func printUser(w io.Writer, u ugm.UserUsage) error {
	legend(w, printUserTree(w, u))
	return nil
}

func printGroup(w io.Writer, g ugm.GroupUsage) error {
	legend(w, printGroupTree(w, g))
	return nil
}

func printUserTree(w io.Writer, u ugm.UserUsage) marks {
	ids := make([]string, 0, len(u.Groups))
	for id := range u.Groups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	apps := make([]string, len(ids))
	for i, id := range ids {
		apps[i] = id
		if g := u.Groups[id]; g != "" {
			apps[i] += " (group " + g + ")"
		}
	}
	return printTree(w, "user "+u.UserName+" · "+applications(apps)+reservedGangs(u.Queues), u.Queues)
}

func printGroupTree(w io.Writer, g ugm.GroupUsage) marks {
	return printTree(w, "group "+g.GroupName+" · "+applications(g.Applications)+reservedGangs(g.Queues), g.Queues)
}

// reservedGangs names the gangs holding a reservation in the tree, for
// its title, as the usage page does ("" for none).
func reservedGangs(root *ugm.QueueUsage) string {
	if root == nil || len(root.ReservedGangs) == 0 {
		return ""
	}
	return " · reserved for " + gangCount(len(root.ReservedGangs)) + ": " + strings.Join(root.ReservedGangs, ", ")
}

// gangCount is "1 gang", "2 gangs"; "" for none.
func gangCount(n int) string {
	switch n {
	case 0:
		return ""
	case 1:
		return "1 gang"
	}
	return strconv.Itoa(n) + " gangs"
}

func applications(apps []string) string {
	switch len(apps) {
	case 0:
		return "no running applications"
	case 1:
		return "1 running application: " + apps[0]
	}
	return strconv.Itoa(len(apps)) + " running applications: " + strings.Join(apps, ", ")
}

// marks says what the printed tables hold that the legend explains.
type marks struct {
	hot      bool // a row at or over hotPercent of a limit
	reserved bool // a cell with what gang reservations hold
}

func (m marks) or(o marks) marks {
	return marks{hot: m.hot || o.hot, reserved: m.reserved || o.reserved}
}

func legend(w io.Writer, m marks) {
	if !m.hot && !m.reserved {
		return
	}
	fmt.Fprintln(w)
	if m.hot {
		fmt.Fprintf(w, "! at or over %d%% of a limit\n", hotPercent)
	}
	if m.reserved {
		fmt.Fprintln(w, "+N reserved: held for gangs not running yet, counted against limits")
	}
}

// printTree prints a title and the tree as a table: one row per queue,
// one column per resource used, limited or reserved anywhere in it, each
// cell "usage/limit (percent)" or just the usage where nothing limits it,
// followed by "+N reserved" where gang reservations hold some (on the
// applications column, "+N gang(s)"). Rows at or over hotPercent of any
// limit (usage only) start with "!". It reports what it printed that the
// legend explains.
func printTree(w io.Writer, title string, root *ugm.QueueUsage) marks {
	fmt.Fprintln(w, printable(title, false))
	if root == nil {
		return marks{}
	}
	names := map[string]bool{}
	walkNodes(root, 0, func(q *ugm.QueueUsage, _ int) {
		for n, v := range q.ResourceUsage.Map() {
			if v != 0 {
				names[n] = true
			}
		}
		for n := range q.ReservedResource.Map() {
			names[n] = true
		}
		for _, b := range q.MaxResources {
			names[b.ID.Name()] = true
		}
	})
	res := make([]string, 0, len(names))
	for n := range names {
		res = append(res, n)
	}
	sort.Strings(res)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := []string{"", "QUEUE", "APPLICATIONS"}
	for _, n := range res {
		header = append(header, strings.ToUpper(printable(n, false)))
	}
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	var seen marks
	walkNodes(root, 0, func(q *ugm.QueueUsage, depth int) {
		hot := false
		cell := func(usage, limit int64, limited bool, format func(int64) string) string {
			if !limited {
				if usage == 0 {
					return "-"
				}
				return format(usage)
			}
			p := percent(usage, limit)
			hot = hot || p >= hotPercent
			share := strconv.Itoa(p) + "%"
			if limit == 0 {
				share = "blocked"
			}
			return fmt.Sprintf("%s/%s (%s)", format(usage), format(limit), share)
		}
		// withReserved puts what reservations hold (text; "" for none)
		// beside the usage; beside no usage, alone.
		withReserved := func(used, reserved string) string {
			if reserved == "" {
				return used
			}
			seen.reserved = true
			if used == "-" {
				return "+" + reserved
			}
			return used + " +" + reserved
		}
		row := []string{"", strings.Repeat("  ", depth) + printable(queueconfig.LeafName(q.QueuePath), false),
			withReserved(cell(int64(len(q.RunningApplications)), int64(q.MaxApplications), q.MaxApplications > 0,
				func(x int64) string { return strconv.FormatInt(x, 10) }), gangCount(len(q.ReservedGangs)))}
		for _, n := range res {
			id := resources.Intern(n)
			limit, limited := q.MaxResources.Get(id)
			format := func(x int64) string { return resources.FormatValue(id, x) }
			reserved := ""
			if r := q.ReservedResource.Get(id); r > 0 {
				reserved = format(r) + " reserved"
			}
			row = append(row, withReserved(cell(q.ResourceUsage.Get(id), limit, limited, format), reserved))
		}
		if hot {
			row[0], seen.hot = "!", true
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	})
	_ = tw.Flush()
	return seen
}

// percent is the share the usage page shows too (resources.Percent).
func percent(usage, limit int64) int { return resources.Percent(usage, limit) }

func walkNodes(q *ugm.QueueUsage, depth int, fn func(*ugm.QueueUsage, int)) {
	fn(q, depth)
	for _, c := range q.Children {
		walkNodes(c, depth+1, fn)
	}
}

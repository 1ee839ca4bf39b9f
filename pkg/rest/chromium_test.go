package rest

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/html"

	"github.com/userquota/userquota/pkg/ledger"
	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/shares"
	"github.com/userquota/userquota/pkg/ugm"
)

// browserConfig and browserCharges make a page worth looking at: sue at
// her cpu limit (hot), alice at 75 % of hers (warn), bob well under; batch
// shares elastically (guaranteed 4 cpu and 16Gi), default does not.
// TestPageInChromium adds carol's gang, reserved in batch, running nothing,
// and a GPU quota tree (browserTree) with dave's pod filling its h100 node.
var browserConfig = queueconfigtest.Root(`
limits:
- limit: sue
  users: [sue]
  maxresources: {vcore: 4, memory: 16Gi}
- limit: everyone else
  users: ["*"]
  maxresources: {vcore: 2, memory: 8Gi}
- limit: dev
  groups: [dev]
  maxresources: {vcore: 8, memory: 32Gi}
queues:
- name: default
- name: batch
  maxapplications: 4
  properties:
    quota.sharing: elastic
  resources:
    guaranteed: {vcore: 4, memory: 16Gi}
    max: {vcore: 6, memory: 24Gi}
`)

var browserTree = `{"kind":"QuotaTree","metadata":{"name":"gpu-model"},"spec":{"resourceNames":["nvidia.com/gpu"],"nodes":{
 "cluster":{"parent":"nil","hard":"true","quota":{"nvidia.com/gpu":"8"}},
 "a100":{"parent":"cluster","hard":"true","quota":{"nvidia.com/gpu":"6"}},
 "h100":{"parent":"cluster","hard":"true","quota":{"nvidia.com/gpu":"2"}}}}}`

var browserCharges = []charge{
	{pod: "s1", user: "sue", groups: []string{"dev"}, queue: "root.batch", app: "train", cpu: 1000, memory: 2 << 30},
	{pod: "s2", user: "sue", groups: []string{"dev"}, queue: "root.batch", app: "train", cpu: 1000, memory: 2 << 30},
	{pod: "s3", user: "sue", groups: []string{"dev"}, queue: "root.batch", app: "eval", cpu: 2000, memory: 4 << 30},
	{pod: "a1", user: "alice", groups: []string{"dev"}, queue: "root.default", app: "notebook", cpu: 1500, memory: 3 << 30},
	{pod: "b1", user: "bob", queue: "root.default", app: "web", cpu: 500, memory: 1 << 30},
}

// chromium returns the Chromium binary, or "" when there is none.
func chromium() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "/usr/bin/chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestPageInChromium loads the usage page, served with real usage (a ugm
// Manager charged through the ledger), in headless Chromium: it checks the
// bars of the DOM Chromium built and writes a screenshot to
// _output/screenshots/usage-page.png (git-ignored). Without Chromium it is
// skipped, except in CI (CI set), where that is a failure.
func TestPageInChromium(t *testing.T) {
	bin := chromium()
	if bin == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium not installed and CI is set: CI must install it (hack/ci-deps.sh, apt-get install chromium)")
		}
		t.Skip("chromium not installed: apt-get install chromium")
	}
	m, _ := newManager(t, browserConfig, browserCharges)
	cfg, err := queueconfig.LoadWithTrees([]byte(browserConfig), map[string]string{"gpu-model.tree.json": browserTree}, "default")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Enforce(cfg, "default"); err != nil {
		t.Fatal(err)
	}
	dave := ugm.Request{User: "dave", Queue: "root.default", App: ugm.AppKey{Namespace: "ns", ID: "infer"},
		Resources: resources.FromMap(map[string]int64{"cpu": 500, "memory": 1 << 30, "pods": 1, "nvidia.com/gpu": 2}),
		Trees:     &ugm.TreePart{Labels: map[string]string{"tree.userquota.io/gpu-model": "h100"}}}
	if err := ledger.New(m).Allocate("d1", dave); err != nil {
		t.Fatal(err)
	}
	carol := ugm.Request{User: "carol", Groups: []string{"dev"}, Queue: "root.batch", App: ugm.AppKey{Namespace: "ns", ID: "sweep"},
		Resources: resources.FromMap(map[string]int64{"cpu": 1000, "memory": 2 << 30, "pods": 2})}
	if err := m.ReserveGang("TaskGroups ns/sweep", &carol); err != nil {
		t.Fatal(err)
	}
	// A cluster of 12 cpu and 48Gi, 2 more cpu wanted by batch.
	m.SetShares(m.ComputeShares(map[string]resources.Vector{"root.batch": resources.FromMap(map[string]int64{"cpu": 2000, "pods": 1})},
		resources.NewLimit(map[string]int64{"cpu": 12000, "memory": 48 << 30, "pods": 110})))
	srv := httptest.NewServer(NewHandler(Options{Partition: "default", Usage: m, Config: func() *queueconfig.Config { return cfg },
		Shares: func() *shares.Table { return m.Shares() }, Forest: m.Forest}))
	defer srv.Close()

	shots := filepath.Join(queueconfigtest.RepoRoot(t), "_output", "screenshots")
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(shots, "usage-page.png")
	_ = os.Remove(shot)
	// Not t.TempDir: Chromium's helper processes may still write there
	// when it returns, and a failed clean-up would fail the test.
	profile, err := os.MkdirTemp("", "userquota-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(profile)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--hide-scrollbars", "--window-size=1280,1900",
		"--user-data-dir="+profile,
		"--screenshot="+shot, "--dump-dom", srv.URL+"/")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(), "HOME="+profile)
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\nstderr:\n%s", bin, err, stderr.String())
	}

	doc := parseHTML(t, stdout.String())
	var sue []meter
	for _, mt := range meters(doc) {
		if mt.Who == "user" && mt.Name == "sue" {
			sue = append(sue, mt)
		}
	}
	want := []meter{
		{Who: "user", Name: "sue", Queue: "root", Resource: "cpu", Usage: "4000", Limit: "4000", Percent: "100", Level: "hot", Width: "width: 100%", Text: "4 / 4 · 100%"},
		{Who: "user", Name: "sue", Queue: "root", Resource: "memory", Usage: "8589934592", Limit: "17179869184", Percent: "50", Level: "ok", Width: "width: 50%", Text: "8Gi / 16Gi · 50%"},
	}
	if diff := cmp.Diff(want, sue); diff != "" {
		t.Errorf("sue's bars in Chromium's DOM (-want,+got):\n%s\nDOM:\n%s", diff, stdout.String())
	}
	var batch []string
	for _, q := range quotas(doc) {
		if q.Queue == "root.batch" {
			batch = append(batch, q.Resource+" "+q.Text+" enforced="+q.Enforced)
		}
	}
	share := m.Shares().Get("root.batch")
	cpuShare, _ := share.Runtime.Get(resources.Intern("cpu"))
	if want := "cpu 4 / " + resources.FormatValue(resources.Intern("cpu"), cpuShare) + " / 6 enforced=true"; len(batch) == 0 || batch[0] != want {
		t.Errorf("batch's guaranteed / share / max in Chromium's DOM: %q, want %q first", batch, want)
	}
	var reserved []string
	for _, n := range findAll(doc, func(n *html.Node) bool {
		return hasClass(n, "reserved") && attr(n, "data-queue") == "root.batch" && attr(n, "data-resource") == "cpu"
	}) {
		reserved = append(reserved, attr(n, "data-who")+" "+attr(n, "data-name")+": "+text(n))
	}
	if diff := cmp.Diff([]string{"queue root.batch: +1 reserved", "user carol: +1 reserved", "group dev: +1 reserved"}, reserved); diff != "" {
		t.Errorf("carol's reservation in Chromium's DOM (-want,+got):\n%s", diff)
	}
	articles := findAll(doc, func(n *html.Node) bool { return n.Data == "article" && attr(n, "data-name") == "sue" })
	if len(articles) != 1 || !hasClass(articles[0], "hot") {
		t.Error("sue's section is not highlighted")
	}
	// The quota tree: every node's usage of its subtree against its quota.
	var tree []string
	for _, mt := range meters(doc) {
		if mt.Who == "tree" {
			tree = append(tree, mt.Name+" "+mt.Queue+" "+mt.Resource+": "+mt.Text+" "+mt.Level)
		}
	}
	if diff := cmp.Diff([]string{
		"gpu-model cluster nvidia.com/gpu: 2 / 8 · 25% ok",
		"gpu-model a100 nvidia.com/gpu: 0 / 6 · 0% ok",
		"gpu-model h100 nvidia.com/gpu: 2 / 2 · 100% hot",
	}, tree); diff != "" {
		t.Errorf("the quota tree's bars in Chromium's DOM (-want,+got):\n%s", diff)
	}
	if a := findAll(doc, func(n *html.Node) bool { return n.Data == "article" && attr(n, "id") == "tree-gpu-model" }); len(a) != 1 || !hasClass(a[0], "hot") {
		t.Error("the tree's section is missing or not highlighted")
	}

	png, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v\nstderr:\n%s", err, stderr.String())
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) || len(png) < 10_000 {
		t.Errorf("%s is not a PNG of a page (%d bytes)", shot, len(png))
	}
	t.Logf("screenshot: %s", strings.TrimPrefix(shot, queueconfigtest.RepoRoot(t)+"/"))
}

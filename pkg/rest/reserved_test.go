package rest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/html"

	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

// reservedOptions are testOptions with two gangs reserved: ann's (group
// dev), who runs nothing yet, in root.sandbox, and bob's second
// application in root.default; each holds 1 cpu, 1Gi and 2 pods.
func reservedOptions(t *testing.T) Options {
	m, cfg := newManager(t, queueconfigtest.Sandbox, testCharges)
	for _, g := range []struct{ key, user, queue, app string }{
		{"TaskGroups ns/ann-job", "ann", "root.sandbox", "ann-job"},
		{"TaskGroups ns/etl", "bob", "root.default", "etl"},
	} {
		req := ugm.Request{User: g.user, Groups: []string{"dev"}, Queue: g.queue, App: ugm.AppKey{Namespace: "ns", ID: g.app},
			Resources: resources.FromMap(map[string]int64{"cpu": 1000, "memory": 1 << 30, "pods": 2})}
		if g.user == "bob" {
			req.Groups = nil
		}
		if err := m.ReserveGang(g.key, &req); err != nil {
			t.Fatalf("reserving %s: %v", g.key, err)
		}
	}
	return Options{Partition: "default", Usage: m, Config: func() *queueconfig.Config { return cfg }}
}

// What the usage endpoints answer over reservedOptions: the reserved
// fields beside usage, ann with nothing but her reservation.
const (
	reservedGang    = `"reservedResource":{"cpu":1000,"memory":1073741824,"pods":2}`
	annReservedJSON = `{"userName":"ann","groups":{},"queues":{"queuePath":"root","resourceUsage":{},"runningApplications":[],"maxResources":{},"maxApplications":0,` +
		reservedGang + `,"reservedGangs":["TaskGroups ns/ann-job"],"children":[` +
		`{"queuePath":"root.sandbox","resourceUsage":{},"runningApplications":[],"maxResources":{},"maxApplications":0,` +
		reservedGang + `,"reservedGangs":["TaskGroups ns/ann-job"],"children":[]}]}}`
	bobReservedJSON = `{"userName":"bob","groups":{"ns/web":""},"queues":{"queuePath":"root","resourceUsage":{"cpu":500,"memory":536870912,"pods":1},"runningApplications":["ns/web"],"maxResources":{},"maxApplications":0,` +
		reservedGang + `,"reservedGangs":["TaskGroups ns/etl"],"children":[` +
		`{"queuePath":"root.default","resourceUsage":{"cpu":500,"memory":536870912,"pods":1},"runningApplications":["ns/web"],"maxResources":{},"maxApplications":0,` +
		reservedGang + `,"reservedGangs":["TaskGroups ns/etl"],"children":[]}]}}`
	devReservedJSON = `{"groupName":"dev","applications":["ns/train"],"queues":{"queuePath":"root","resourceUsage":{"cpu":2000,"memory":2147483648,"pods":2},"runningApplications":["ns/train"],"maxResources":{},"maxApplications":0,` +
		reservedGang + `,"reservedGangs":["TaskGroups ns/ann-job"],"children":[` +
		`{"queuePath":"root.sandbox","resourceUsage":{"cpu":2000,"memory":2147483648,"pods":2},"runningApplications":["ns/train"],"maxResources":{"cpu":3000},"maxApplications":0,` +
		reservedGang + `,"reservedGangs":["TaskGroups ns/ann-job"],"children":[]}]}}`
	queuesReservedJSON = `{"queuePath":"root","resourceUsage":{"cpu":2500,"memory":2684354560,"pods":3},"runningApplications":["ns/train","ns/web"],"maxResources":{},"maxApplications":0,` +
		`"reservedResource":{"cpu":2000,"memory":2147483648,"pods":4},"reservedGangs":["TaskGroups ns/ann-job","TaskGroups ns/etl"],"children":[` +
		`{"queuePath":"root.default","resourceUsage":{"cpu":500,"memory":536870912,"pods":1},"runningApplications":["ns/web"],"maxResources":{},"maxApplications":0,` +
		reservedGang + `,"reservedGangs":["TaskGroups ns/etl"],"children":[]},` +
		`{"queuePath":"root.sandbox","resourceUsage":{"cpu":2000,"memory":2147483648,"pods":2},"runningApplications":["ns/train"],"maxResources":{"cpu":4000,"memory":8589934592},"maxApplications":3,` +
		reservedGang + `,"reservedGangs":["TaskGroups ns/ann-job"],"children":[]}]}`
)

// TestReservedEndpoints: every usage endpoint shows what gang
// reservations hold beside usage, a user whose only activity is a
// reservation included; the queue tree endpoint shows reservedResource.
func TestReservedEndpoints(t *testing.T) {
	h := NewHandler(reservedOptions(t))
	const usage = "/ws/v1/partition/default/usage/"
	for _, tc := range []struct {
		name, path, body string
	}{
		{name: "users", path: usage + "users", body: "[" + annReservedJSON + "," + bobReservedJSON + "," + sueJSON + "]"},
		{name: "a user with a reservation only", path: usage + "user/ann", body: annReservedJSON},
		{name: "a user running one application and reserving another", path: usage + "user/bob", body: bobReservedJSON},
		{name: "groups", path: usage + "groups", body: "[" + devReservedJSON + "]"},
		{name: "one group", path: usage + "group/dev", body: devReservedJSON},
		{name: "queues", path: usage + "queues", body: queuesReservedJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body, _ := get(t, h, "GET", tc.path, nil)
			if status != 200 {
				t.Fatalf("status %d: %s", status, body)
			}
			if diff := cmp.Diff(tc.body+"\n", body); diff != "" {
				t.Errorf("body (-want,+got):\n%s", diff)
			}
		})
	}

	t.Run("queue tree", func(t *testing.T) {
		status, body, _ := get(t, h, "GET", "/ws/v1/partition/default/queues", nil)
		if status != 200 {
			t.Fatalf("status %d: %s", status, body)
		}
		var root PartitionQueue
		if err := json.Unmarshal([]byte(body), &root); err != nil {
			t.Fatal(err)
		}
		got := map[string]map[string]int64{}
		var collect func(q PartitionQueue)
		collect = func(q PartitionQueue) {
			got[q.QueueName] = q.ReservedResource
			for _, c := range q.Children {
				collect(c)
			}
		}
		collect(root)
		gang := map[string]int64{"cpu": 1000, "memory": 1 << 30, "pods": 2}
		want := map[string]map[string]int64{
			"root":         {"cpu": 2000, "memory": 2 << 30, "pods": 4},
			"root.default": gang,
			"root.sandbox": gang,
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("reservedResource by queue (-want,+got):\n%s", diff)
		}
	})
}

// reservedLine is what one "+... reserved" line of the page says.
type reservedLine struct {
	Who, Name, Queue, Resource, Reserved, Text string
}

// TestPageReservations: the page shows what reservations hold beside the
// usage, in every tree and column, as a segment of the meter where a limit
// applies, and the reserved gangs of each user and group; ann, who runs
// nothing yet, has her section.
func TestPageReservations(t *testing.T) {
	status, body, _ := get(t, NewHandler(reservedOptions(t)), "GET", "/", nil)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	doc := parseHTML(t, body)

	var lines []reservedLine
	for _, n := range findAll(doc, func(n *html.Node) bool { return hasClass(n, "reserved") }) {
		if attr(n, "data-queue") != "root.sandbox" {
			continue
		}
		lines = append(lines, reservedLine{Who: attr(n, "data-who"), Name: attr(n, "data-name"), Queue: attr(n, "data-queue"),
			Resource: attr(n, "data-resource"), Reserved: attr(n, "data-reserved"), Text: text(n)})
	}
	var want []reservedLine
	for _, who := range [][2]string{{"queue", "root.sandbox"}, {"user", "ann"}, {"group", "dev"}} {
		want = append(want,
			reservedLine{Who: who[0], Name: who[1], Queue: "root.sandbox", Resource: "applications", Reserved: "1", Text: "+1 gang reserved"},
			reservedLine{Who: who[0], Name: who[1], Queue: "root.sandbox", Resource: "cpu", Reserved: "1000", Text: "+1 reserved"},
			reservedLine{Who: who[0], Name: who[1], Queue: "root.sandbox", Resource: "memory", Reserved: "1073741824", Text: "+1Gi reserved"},
			reservedLine{Who: who[0], Name: who[1], Queue: "root.sandbox", Resource: "pods", Reserved: "2", Text: "+2 reserved"})
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("reserved lines in root.sandbox (-want,+got):\n%s", diff)
	}

	// The meter's segment: usage plus reservation against the limit. The
	// queue's cpu 2+1 of 4, memory 2Gi+1Gi of 8Gi; dev's cpu 2+1 of 3.
	var held []string
	for _, n := range findAll(doc, func(n *html.Node) bool { return hasClass(n, "meter") }) {
		for _, s := range findAll(n, func(n *html.Node) bool { return hasClass(n, "held") }) {
			held = append(held, attr(n, "data-who")+" "+attr(n, "data-name")+" "+attr(n, "data-resource")+": "+attr(s, "style"))
		}
	}
	if diff := cmp.Diff([]string{
		"queue root.sandbox cpu: left: 50%; width: 25%",
		"queue root.sandbox memory: left: 25%; width: 12%",
		"group dev cpu: left: 66%; width: 34%",
	}, held); diff != "" {
		t.Errorf("reserved segments of the meters (-want,+got):\n%s", diff)
	}

	apps := map[string]string{}
	for _, a := range findAll(doc, func(n *html.Node) bool { return n.Data == "article" }) {
		for _, p := range findAll(a, func(n *html.Node) bool { return hasClass(n, "apps") }) {
			apps[attr(a, "data-who")+" "+attr(a, "data-name")] = text(p)
		}
	}
	if diff := cmp.Diff(map[string]string{
		"user ann":  "0 running applications · reserved for 1 gang: TaskGroups ns/ann-job",
		"user bob":  "1 running application: ns/web · reserved for 1 gang: TaskGroups ns/etl",
		"user sue":  "1 running application: ns/train (group dev)",
		"group dev": "1 running application: ns/train · reserved for 1 gang: TaskGroups ns/ann-job",
	}, apps); diff != "" {
		t.Errorf("applications and gangs of each section (-want,+got):\n%s", diff)
	}

	// Reservations do not make a meter hot: the summary is usage only.
	alerts := findAll(doc, func(n *html.Node) bool { return n.Data == "li" && attr(n, "data-who") != "" })
	if len(alerts) != 1 || !strings.HasPrefix(text(alerts[0]), "user sue:") {
		t.Errorf("%d alerts, want sue's only", len(alerts))
	}
}

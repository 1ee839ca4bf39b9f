package simulator

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

// gangDecl is a gang line declaring name with the minimum min (a JSON
// object) and any other fields.
func gangDecl(name, min string, extra ...string) string {
	fields := append([]string{`"op":"gang"`, `"gang":"` + name + `"`, `"min":` + min}, extra...)
	return "{" + strings.Join(fields, ",") + "}"
}

// member is an allocate line of a pod of gang g asking n units of root.q.
func member(pod, g, n string, extra ...string) string {
	return units(pod, "root.q", n, append([]string{`"gang":"` + g + `"`}, extra...)...)
}

// TestGangLineErrors: bad gang lines and bad gang fields of allocate
// lines are line errors that change nothing: the first declaration of g
// (4 units) stands, so x fits beside g's reservation where a minimum of 6
// would not.
func TestGangLineErrors(t *testing.T) {
	min4 := `{"example.com/units":"4","pods":"2"}`
	got := runLines(t, maxConfig, Options{},
		`{"op":"gang"}`,
		gangDecl("", `{"pods":"1"}`),
		`{"op":"gang","gang":"g"}`,
		gangDecl("g", `{"example.com/units":"lots","pods":"2"}`),
		gangDecl("g", `{"example.com/units":"4","pods":"0"}`),
		gangDecl("g", `5`),
		gangDecl("g", `{}`),
		gangDecl("g", `{"example.com/units":"0"}`),
		gangDecl("g", min4, `"style":"soft"`),
		gangDecl("g", min4, `"timeout":"1 minute"`),
		gangDecl("g", min4, `"timeout":"0s"`),
		member("p1", "g", "1"),
		gangDecl("g", min4, `"timeout":"60s"`),
		gangDecl("g", min4, `"timeout":"60s"`),
		gangDecl("g", `{"example.com/units":"6","pods":"2"}`, `"timeout":"60s"`),
		gangDecl("g", min4, `"timeout":"60s"`, `"style":"Hard"`),
		gangDecl("h", min4, `"app":"g"`),
		member("p1", "", "1"),
		member("p1", "g", "1", `"app":"other"`),
		member("p1", "g", "1", `"namespace":"ml"`),
		`{"op":"allocate","pod":"p1","queue":"root.q","gang":7,"resources":{}}`,
		member("p1", "g", "1", `"app":"g"`),
		units("x", "root.q", "6"),
	)
	checkLines(t, got, []string{
		`{"line":1,"error":"gang: missing \"gang\" (the gang's id, which its pods' allocate lines name)"}`,
		`{"line":2,"error":"gang: missing \"gang\" (the gang's id, which its pods' allocate lines name)"}`,
		`{"line":3,"error":"gang: missing \"min\" (the gang's whole minimum, e.g. {\"cpu\":\"8\"}, or {\"cpu\":\"8\",\"pods\":\"4\"} to count its pods)"}`,
		`{"line":4,"error":"gang: min: example.com/units: invalid quantity \"lots\"...`,
		`{"line":5,"error":"gang: \"min\": \"pods\" \"0\" is no number of pods (at least 1; leave \"pods\" out for a minimum that counts none)"}`,
		`{"line":6,"error":"field \"min\" must be an object of strings (found a number)"}`,
		`{"line":7,"error":"gang: \"min\" reserves nothing (give at least one resource above 0, e.g. {\"cpu\":\"8\"})"}`,
		`{"line":8,"error":"gang: \"min\" reserves nothing (give at least one resource above 0, e.g. {\"cpu\":\"8\"})"}`,
		`{"line":9,"error":"gang: bad \"style\" \"soft\" (want Soft or Hard)"}`,
		`{"line":10,"error":"gang: bad \"timeout\" \"1 minute\" (a Go duration, e.g. \"60s\" or \"15m\")"}`,
		`{"line":11,"error":"gang: \"timeout\" \"0s\" is not positive (leave it out for the default, 15m0s)"}`,
		`{"line":12,"error":"allocate: gang \"g\" is not declared (a gang line declares it before its pods)"}`,
		`{"gang":"g","declared":true}`,
		`{"gang":"g","declared":true}`,
		`{"line":15,"error":"gang: gang \"g\" is declared already (line 13) with another minimum"}`,
		`{"line":16,"error":"gang: gang \"g\" is declared already (line 13) with another style"}`,
		`{"line":17,"error":"gang: application default/g is gang \"g\"'s already (line 13): an application is one gang"}`,
		`{"line":18,"error":"allocate: \"gang\" is empty (leave it out for a pod of no gang)"}`,
		`{"line":19,"error":"allocate: gang \"g\" is application default/g, not default/other (leave \"app\" and \"namespace\" out for its own)"}`,
		`{"line":20,"error":"allocate: gang \"g\" is application default/g, not ml/g (leave \"app\" and \"namespace\" out for its own)"}`,
		`{"line":21,"error":"field \"gang\" must be a string (found a number)"}`,
		`{"gang":"g","reserved":true}`,
		`{"pod":"p1","allowed":true}`,
		`{"pod":"x","allowed":true}`,
	})
}

// TestGangDecisions pins what the goldens do not: each case is a trace
// on root.q (max 10 units) and the lines it prints.
func TestGangDecisions(t *testing.T) {
	min8 := `{"example.com/units":"8","pods":"4"}`
	tests := []struct {
		name    string
		requeue bool
		lines   []string
		want    []string
		pending []string
	}{{
		name: "without --requeue a refused gang's pods are forgotten; a later pod reserves",
		lines: []string{
			gangDecl("g", min8),
			units("x", "root.q", "4"),
			member("p1", "g", "2"),
			`{"op":"release","pod":"x"}`,
			member("p2", "g", "2"),
		},
		want: []string{
			`{"gang":"g","declared":true}`,
			`{"pod":"x","allowed":true}`,
			`{"gang":"g","reserved":false,"reason":"gang TaskGroups default/g waits until its minimum of 4 pods (example.com/units=8,pods=4) fits at once: queue root.q would exceed max: example.com/units 4+8 > 10"}`,
			`{"pod":"p1","allowed":false,"reason":"gang TaskGroups default/g waits until its minimum of 4 pods (example.com/units=8,pods=4) fits at once: queue root.q would exceed max: example.com/units 4+8 > 10","who":"queue","name":"root.q","queue":"root.q","limit":"resources","resource":"example.com/units"}`,
			`{"pod":"x","released":true}`,
			`{"gang":"g","reserved":true}`,
			`{"pod":"p2","allowed":true}`,
		},
	}, {
		name: "a wait reaching the timeout exactly fires it; timeouts fire in deadline order",
		lines: []string{
			gangDecl("slow", `{"example.com/units":"2","pods":"2"}`, `"timeout":"90s"`),
			gangDecl("fast", `{"example.com/units":"2","pods":"2"}`, `"timeout":"30s"`),
			member("s1", "slow", "1"),
			member("f1", "fast", "1"),
			`{"op":"wait","duration":"29s"}`,
			`{"op":"wait","duration":"1s"}`,
			`{"op":"wait","duration":"5m"}`,
		},
		want: []string{
			`{"gang":"slow","declared":true}`,
			`{"gang":"fast","declared":true}`,
			`{"gang":"slow","reserved":true}`,
			`{"pod":"s1","allowed":true}`,
			`{"gang":"fast","reserved":true}`,
			`{"pod":"f1","allowed":true}`,
			`{"wait":"29s"}`,
			`{"wait":"1s"}`,
			`{"gang":"fast","timedout":true}`,
			`{"wait":"5m0s"}`,
			`{"gang":"slow","timedout":true}`,
		},
	}, {
		name: "a Hard gang that ran its minimum neither times out nor fails; its next pod is ordinary",
		lines: []string{
			gangDecl("g", `{"example.com/units":"2","pods":"2"}`, `"style":"Hard"`, `"timeout":"1m"`),
			member("p1", "g", "1"),
			member("p2", "g", "1"),
			`{"op":"wait","duration":"2m"}`,
			member("p3", "g", "9"),
		},
		want: []string{
			`{"gang":"g","declared":true}`,
			`{"gang":"g","reserved":true}`,
			`{"pod":"p1","allowed":true}`,
			`{"pod":"p2","allowed":true}`,
			`{"wait":"2m0s"}`,
			`{"pod":"p3","allowed":false,"reason":"queue root.q would exceed max: example.com/units 2+9 > 10","who":"queue","name":"root.q","queue":"root.q","limit":"resources","resource":"example.com/units"}`,
		},
	}, {
		name: "a Hard gang whose pods all ran but drew less than its minimum times out without failing",
		lines: []string{
			gangDecl("g", `{"example.com/units":"4","pods":"2"}`, `"style":"Hard"`, `"timeout":"1m"`),
			member("p1", "g", "1"),
			member("p2", "g", "1"),
			`{"op":"wait","duration":"1m"}`,
			member("p3", "g", "1"),
		},
		want: []string{
			`{"gang":"g","declared":true}`,
			`{"gang":"g","reserved":true}`,
			`{"pod":"p1","allowed":true}`,
			`{"pod":"p2","allowed":true}`,
			`{"wait":"1m0s"}`,
			`{"gang":"g","timedout":true}`,
			`{"pod":"p3","allowed":true}`,
		},
	}, {
		name: "a minimum without pods (the contract's gang line): a Hard gang with anything left at its timeout fails, although all its pods ran",
		lines: []string{
			gangDecl("g", `{"example.com/units":"4"}`, `"style":"Hard"`, `"timeout":"1m"`),
			member("p1", "g", "1"),
			member("p2", "g", "1"),
			`{"op":"time","advance":"1m"}`,
			member("p3", "g", "1"),
		},
		want: []string{
			`{"gang":"g","declared":true}`,
			`{"gang":"g","reserved":true}`,
			`{"pod":"p1","allowed":true}`,
			`{"pod":"p2","allowed":true}`,
			`{"advance":"1m0s"}`,
			`{"gang":"g","timedout":true,"failed":true,"reason":"gang TaskGroups default/g failed: its minimum did not run within 1m0s (gangSchedulingStyle=Hard); delete and resubmit the application"}`,
			`{"pod":"p3","allowed":false,"reason":"gang TaskGroups default/g failed: its minimum did not run within 1m0s (gangSchedulingStyle=Hard); delete and resubmit the application"}`,
		},
	}, {
		name: "a minimum without pods all drawn before its timeout ends the reservation; the timeout prints nothing",
		lines: []string{
			gangDecl("g", `{"example.com/units":"2"}`, `"style":"Hard"`, `"timeout":"1m"`),
			member("p1", "g", "1"),
			member("p2", "g", "1"),
			`{"op":"time","advance":"2m"}`,
			member("p3", "g", "9"),
		},
		want: []string{
			`{"gang":"g","declared":true}`,
			`{"gang":"g","reserved":true}`,
			`{"pod":"p1","allowed":true}`,
			`{"pod":"p2","allowed":true}`,
			`{"advance":"2m0s"}`,
			`{"pod":"p3","allowed":false,"reason":"queue root.q would exceed max: example.com/units 2+9 > 10","who":"queue","name":"root.q","queue":"root.q","limit":"resources","resource":"example.com/units"}`,
		},
	}, {
		name: "a minimum without pods is quoted by its resources alone",
		lines: []string{
			gangDecl("big", `{"example.com/units":"12"}`),
			gangDecl("g", `{"example.com/units":"8"}`),
			units("x", "root.q", "4"),
			member("b1", "big", "1"),
			member("p1", "g", "1"),
		},
		want: []string{
			`{"gang":"big","declared":true}`,
			`{"gang":"g","declared":true}`,
			`{"pod":"x","allowed":true}`,
			`{"gang":"big","reserved":false,"reason":"gang TaskGroups default/big can never run: its minimum of example.com/units=12 is more than a maximum on its path: queue root.q would exceed max: example.com/units 4+12 > 10","never":true}`,
			`{"pod":"b1","allowed":false,"reason":"gang TaskGroups default/big can never run: its minimum of example.com/units=12 is more than a maximum on its path: queue root.q would exceed max: example.com/units 4+12 > 10","who":"queue","name":"root.q","queue":"root.q","limit":"resources","resource":"example.com/units"}`,
			`{"gang":"g","reserved":false,"reason":"gang TaskGroups default/g waits until its minimum of example.com/units=8 fits at once: queue root.q would exceed max: example.com/units 4+8 > 10"}`,
			`{"pod":"p1","allowed":false,"reason":"gang TaskGroups default/g waits until its minimum of example.com/units=8 fits at once: queue root.q would exceed max: example.com/units 4+8 > 10","who":"queue","name":"root.q","queue":"root.q","limit":"resources","resource":"example.com/units"}`,
		},
	}, {
		name:    "the release of a reserved gang's last pod releases its reservation and lets its room in",
		requeue: true,
		lines: []string{
			gangDecl("g", min8),
			member("p1", "g", "2"),
			units("x", "root.q", "4"),
			`{"op":"release","pod":"p1"}`,
		},
		want: []string{
			`{"gang":"g","declared":true}`,
			`{"gang":"g","reserved":true}`,
			`{"pod":"p1","allowed":true}`,
			`{"pod":"x","allowed":false,"reason":"queue root.q would exceed max: example.com/units 8+4 > 10 (6 of it admitted, not running yet)","who":"queue","name":"root.q","queue":"root.q","limit":"resources","resource":"example.com/units"}`,
			`{"pod":"p1","released":true}`,
			`{"gang":"g","released":true}`,
			`{"pod":"x","allowed":true}`,
		},
		pending: []string{},
	}, {
		name:    "withdrawing a reserved gang's last pod, held for what it asks beyond the minimum, releases the reservation",
		requeue: true,
		lines: []string{
			gangDecl("g", `{"example.com/units":"2","pods":"1"}`),
			units("x", "root.q", "5"),
			member("p1", "g", "6"),
			`{"op":"release","pod":"p1"}`,
		},
		want: []string{
			`{"gang":"g","declared":true}`,
			`{"pod":"x","allowed":true}`,
			`{"gang":"g","reserved":true}`,
			`{"pod":"p1","allowed":false,"reason":"queue root.q would exceed max: example.com/units 5+6 > 10","who":"queue","name":"root.q","queue":"root.q","limit":"resources","resource":"example.com/units"}`,
			`{"pod":"p1","released":false}`,
			`{"gang":"g","released":true}`,
		},
		pending: []string{},
	}, {
		name: "a config line drops the reservation, as the plugin's; the next pod reserves again",
		lines: []string{
			gangDecl("g", min8),
			member("p1", "g", "2"),
			`{"op":"config","config":` + jsonString(maxConfig) + `}`,
			units("x", "root.q", "4"),
			member("p2", "g", "2"),
		},
		want: []string{
			`{"gang":"g","declared":true}`,
			`{"gang":"g","reserved":true}`,
			`{"pod":"p1","allowed":true}`,
			`{"config":"applied"}`,
			`{"pod":"x","allowed":true}`,
			`{"gang":"g","reserved":false,"reason":"gang TaskGroups default/g waits until its minimum of 4 pods (example.com/units=8,pods=4) fits at once: queue root.q would exceed max: example.com/units 6+6 > 10"}`,
			`{"pod":"p2","allowed":false,"reason":"gang TaskGroups default/g waits until its minimum of 4 pods (example.com/units=8,pods=4) fits at once: queue root.q would exceed max: example.com/units 6+6 > 10","who":"queue","name":"root.q","queue":"root.q","limit":"resources","resource":"example.com/units"}`,
		},
	}, {
		name: "what the gang's application runs already counts toward its minimum",
		lines: []string{
			gangDecl("g", `{"example.com/units":"4","pods":"2"}`),
			units("o1", "root.q", "4", `"app":"g"`),
			units("o2", "root.q", "1", `"app":"g"`),
			member("p1", "g", "1"),
			units("x", "root.q", "4"),
		},
		want: []string{
			`{"gang":"g","declared":true}`,
			`{"pod":"o1","allowed":true}`,
			`{"pod":"o2","allowed":true}`,
			`{"pod":"p1","allowed":true}`,
			`{"pod":"x","allowed":true}`,
		},
	}, {
		name:    "a gang's pods of another user are refused while the gang runs for its first",
		requeue: true,
		lines: []string{
			gangDecl("g", `{"example.com/units":"4","pods":"2"}`),
			member("p1", "g", "1", `"user":"sue"`),
			member("p2", "g", "1", `"user":"bob"`),
		},
		want: []string{
			`{"gang":"g","declared":true}`,
			`{"gang":"g","reserved":true}`,
			`{"pod":"p1","allowed":true}`,
			`{"pod":"p2","allowed":false,"reason":"application default/g is already charged to user \"sue\" in queue root.q (this pod: user \"bob\", queue root.q)"}`,
		},
		pending: []string{"p2"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := runLines(t, maxConfig, Options{Requeue: tc.requeue}, tc.lines...)
			checkLines(t, got, tc.want)
			checkPending(t, got, tc.pending)
		})
	}
}

// jsonString quotes s as a JSON string (a config line's YAML).
func jsonString(s string) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%q", s)
	return b.String()
}

// TestGangsWholeOrNothing is the scenario on the simulator: two
// users each submit three gangs of 8 pods x 1 cpu into a queue of max 20
// cpu with a user limit of 16 cpu, all at once; then the pods of one
// gang that runs whole end, one by one, until every gang has run. Each
// time a gang has ended, each user's usage plus reservation (from ugm)
// is a whole number of gangs, and every gang runs in the end. The same
// pods without gangs are admitted in part: the test fails if gangs stop
// mattering.
func TestGangsWholeOrNothing(t *testing.T) {
	const cfg = `partitions:
  - name: default
    queues:
      - name: root
        queues:
          - name: q
            resources:
              max: {vcore: 20}
            limits:
              - limit: per user
                users: ["*"]
                maxresources: {vcore: 16}
`
	for _, gangs := range []bool{true, false} {
		t.Run(fmt.Sprintf("gangs=%v", gangs), func(t *testing.T) {
			var out bytes.Buffer
			s, err := newSim([]byte(cfg), Options{Requeue: true, Starvation: DefaultStarvation}, &out)
			if err != nil {
				t.Fatal(err)
			}
			step := func(line string) {
				t.Helper()
				if err := s.replay(bufio.NewReader(strings.NewReader(line))); err != nil {
					t.Fatal(err)
				}
			}
			type job struct {
				user, name string
				pods       []string
				ran        bool
			}
			var jobs []*job
			for _, user := range []string{"sue", "bob"} {
				for i := 1; i <= 3; i++ {
					j := &job{user: user, name: fmt.Sprintf("%s%d", user, i)}
					if gangs {
						step(gangDecl(j.name, `{"cpu":"8","pods":"8"}`))
					}
					jobs = append(jobs, j)
				}
			}
			// Submitted interleaved, as two users' controllers would.
			for k := 1; k <= 8; k++ {
				for _, j := range jobs {
					pod := fmt.Sprintf("%s-%d", j.name, k)
					j.pods = append(j.pods, pod)
					field := `"app":"` + j.name + `"`
					if gangs {
						field = `"gang":"` + j.name + `"`
					}
					step(fmt.Sprintf(`{"op":"allocate","pod":%q,"user":%q,"queue":"root.q",%s,"resources":{"cpu":"1"}}`, pod, j.user, field))
				}
			}
			whole := func() bool {
				per := map[string]int64{}
				for _, u := range s.ledger.Manager().Users() {
					per[u.UserName] += u.Queues.ResourceUsage.Get(resources.Intern(resources.CPU))
				}
				for _, j := range jobs {
					if held, ok := s.ledger.Manager().GangHeld(ugmKey(j.name)); ok {
						per[j.user] += held.Get(resources.Intern(resources.CPU))
					}
				}
				for _, v := range per {
					if v%8000 != 0 {
						return false
					}
				}
				return true
			}
			if !gangs {
				if whole() {
					t.Fatal("without gangs every user's usage is whole gangs: the scenario no longer shows what gangs change")
				}
				return
			}
			for round := 0; ; round++ {
				if !whole() {
					t.Fatalf("round %d: a user's usage plus reservation is not whole gangs:\n%s", round, out.String())
				}
				var running *job
				for _, j := range jobs {
					if !j.ran && allLive(s, j.pods) {
						running = j
						break
					}
				}
				if running == nil {
					break
				}
				running.ran = true
				for _, pod := range running.pods {
					step(`{"op":"release","pod":"` + pod + `"}`)
				}
			}
			for _, j := range jobs {
				if !j.ran {
					t.Errorf("gang %s never ran:\n%s", j.name, out.String())
				}
			}
			if n := len(s.pendingByName); n != 0 {
				t.Errorf("%d pods still held", n)
			}
		})
	}
}

// ugmKey is ugm's key of the reservation of the trace's gang name (its
// application, in namespace default).
func ugmKey(name string) string {
	return gangID(ugm.AppKey{Namespace: defaultNamespace, ID: name}).String()
}

// allLive reports whether every pod is charged.
func allLive(s *sim, pods []string) bool {
	for _, p := range pods {
		if _, ok := s.ledger.Get(p); !ok {
			return false
		}
	}
	return true
}

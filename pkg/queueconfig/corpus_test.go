package queueconfig

import (
	"bufio"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const corpusDir = "testdata/yunikorn-configs"

// corpusReasons maps each INVALID corpus file to a piece of our error text
// that names YuniKorn's reason for refusing it.
var corpusReasons = map[string]string{
	"03-queue-config-partition-options-WRAPPED.yaml":    `partitions[0].nodesortpolicy: expected a mapping (a node sort policy), got the string "fair"`,
	"15-validate-conf-wrong-text.yaml":                  `line 7: partitions[1]: expected a mapping (a partition), got the string "wrong_text"`,
	"17-ugm-design-example-entry-WRAPPED.yaml":          `line 9: partitions[0].queues[0].limits[0].cpu: unknown key "cpu"`,
	"18-quota-preemptor-design.yaml":                    `unknown key "quota.preemption.delay" in queue resources`,
	"21-core-config-limit.yaml":                         `the wildcard group "*" on root.level1 needs a named group limit before it`,
	"24-core-test-user-after-wildcard.yaml":             `user "user1" comes after the wildcard user "*"`,
	"25-core-test-limit-maxapps-over-queue.yaml":        `maxapplications 1000 is above the queue's maxapplications 100`,
	"26-core-test-user-maxapps-hierarchy.yaml":          `user "user1": maxapplications 90 on root.level1.leaf is above the 50 set for user "user1" on root.level1`,
	"27-core-test-wildcard-group-hierarchy.yaml":        `group "*": maxresources memory 90000 on root.level1.leaf is above the memory 10000 set for group "*" on root`,
	"28-core-test-root-resources.yaml":                  `root queue must not have resources`,
	"31-derived-wildcard-user-before-named.yaml":        `user "test-user" comes after the wildcard user "*"`,
	"33-derived-group-wildcard-only.yaml":               `the wildcard group "*" on root.parent needs a named group limit before it`,
	"34-derived-limit-all-zero-resources.yaml":          `every maxresources value is 0`,
	"36-derived-limit-without-values.yaml":              `sets neither maxresources nor maxapplications`,
	"37-derived-limit-above-queue-max.yaml":             `maxresources memory 200 is above the queue's max memory 100`,
	"38-derived-child-user-above-parent-wildcard.yaml":  `user "test-user2": maxresources memory 150 on root.parent.child1 is above the memory 100 set for the wildcard user "*" on root.parent`,
	"39-derived-partition-limits-differ-from-root.yaml": `partition limits and root queue limits are not equivalent`,
	"40-derived-duplicate-user-in-list.yaml":            `user "user1" is listed twice in the limits of root`,
}

// corpusDisagreements lists corpus files whose README verdict we do not
// follow, with the reason and our error text. Keep it short and explained.
var corpusDisagreements = map[string]string{
	// The README says VALID, but wrapping the design doc's fragment (which
	// starts with `limits:`) under a root `limits:` left the key twice in
	// one mapping. YuniKorn's own decoder (yaml.v3) refuses that file with
	// `line 6: mapping key "limits" already defined at line 5`; so do we,
	// since a repeated key silently dropping its first value is a classic
	// config mistake. The fragment itself loads: see TestDesignDocLimits.
	"16-ugm-design-limits-WRAPPED.yaml": `line 6: partitions[0].queues[0].limits: key "limits" is given twice (first at line 5)`,
}

// readCorpusTable returns file -> true (VALID) / false (INVALID) from the
// corpus README's table.
func readCorpusTable(t *testing.T) map[string]bool {
	t.Helper()
	f, err := os.Open(filepath.Join(corpusDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	verdicts := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "| ") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) != 7 {
			continue
		}
		name := strings.TrimSpace(cells[1])
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		verdict := strings.TrimSpace(cells[4])
		switch {
		case strings.Contains(verdict, "INVALID"):
			verdicts[name] = false
		case strings.HasPrefix(verdict, "VALID"):
			verdicts[name] = true
		default:
			t.Fatalf("README row for %s has no verdict: %q", name, verdict)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return verdicts
}

func TestCorpus(t *testing.T) {
	verdicts := readCorpusTable(t)
	files, err := filepath.Glob(filepath.Join(corpusDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 40 || len(verdicts) != 40 {
		t.Fatalf("corpus has %d files and %d README rows, want 40 of each", len(files), len(verdicts))
	}
	onDisk := map[string]bool{}
	for _, f := range files {
		onDisk[filepath.Base(f)] = true
	}
	for name := range verdicts {
		if !onDisk[name] {
			t.Errorf("README lists %s, which is not in %s", name, corpusDir)
		}
	}
	for name := range corpusReasons {
		if v, ok := verdicts[name]; !ok || v {
			t.Errorf("corpusReasons has %s, which the README does not mark INVALID", name)
		}
	}

	sort.Strings(files)
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			valid, listed := verdicts[name]
			if !listed {
				t.Fatalf("%s is not in the README table: every corpus file needs a verdict", name)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := Parse(data)
			if want, ok := corpusDisagreements[name]; ok {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("known disagreement: want an error containing %q, got %v", want, err)
				}
				return
			}
			if valid {
				if err != nil {
					t.Fatalf("VALID file refused:\n%v", err)
				}
				if cfg == nil || len(cfg.Partitions) == 0 || cfg.Partitions[0].Root == nil {
					t.Fatalf("VALID file gave no usable config: %+v", cfg)
				}
				return
			}
			if err == nil {
				t.Fatalf("INVALID file accepted")
			}
			if cfg != nil {
				t.Fatalf("INVALID file returned a config with its error")
			}
			want, ok := corpusReasons[name]
			if !ok {
				t.Fatalf("no expected reason for INVALID file; got:\n%v", err)
			}
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("error does not mention %q:\n%v", want, err)
			}
		})
	}
}

// TestDesignDocLimits loads the enforcement design's canonical limits (the
// fragment of corpus file 16, without the doubled key) and checks that it
// is read as the design means it.
func TestDesignDocLimits(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(corpusDir, "16-ugm-design-limits-WRAPPED.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	fixed := strings.Replace(string(data), "        limits:\n        limits:\n", "        limits:\n", 1)
	cfg := mustParse(t, fixed)
	root := cfg.Partitions[0].Root
	if len(root.Limits) != 4 {
		t.Fatalf("want 4 limits on root, got %d", len(root.Limits))
	}
	sue := root.Limits[0]
	if sue.Users[0] != "sue" || sue.MaxResources.String() != "cpu=5,memory=25G" {
		t.Errorf("sue's limit: %+v (%s)", sue, sue.MaxResources)
	}
	if got := root.Limits[3].Groups; len(got) != 1 || got[0] != "*" {
		t.Errorf("group catch-all: %v", got)
	}
}

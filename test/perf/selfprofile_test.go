package perf

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	pprofile "github.com/google/pprof/profile"
)

// TestSelfCPUProfile: -pprof-self's profile of this process is written
// under -out with the name given, and is a CPU profile pprof reads.
func TestSelfCPUProfile(t *testing.T) {
	was := *outDir
	*outDir = t.TempDir()
	t.Cleanup(func() { *outDir = was })
	name := selfProfileName(filepath.Join("pprof", "run1-backlog.pb.gz"))
	if want := filepath.Join("pprof", "run1-backlog-self.pb.gz"); name != want {
		t.Fatalf("selfProfileName = %q, want %q", name, want)
	}
	if err := selfCPUProfile(context.Background(), 200*time.Millisecond, name); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(*outDir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := pprofile.Parse(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(p.SampleType) == 0 || p.SampleType[len(p.SampleType)-1].Type != "cpu" {
		t.Errorf("%s: sample types %v, want a CPU profile", name, p.SampleType)
	}
	if p.DurationNanos < int64(100*time.Millisecond) {
		t.Errorf("%s: spans %v, want the 200ms asked for", name, time.Duration(p.DurationNanos))
	}
}

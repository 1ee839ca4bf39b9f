// Command memlat prints this machine's memory latency: the time of one
// load that depends on the load before it, over buffers from one that
// fits a core's cache to ones far larger than the last level, each
// visited in a random cycle of 64-byte lines. The plugin's check of a
// random user among many is a few such dependent loads (the request and
// handle, the tracker nodes), so its cost in ns follows the machine's
// latency more than its clock (docs/performance.md, "Machines"):
//
//	go run ./test/perf/memlat
package main

import (
	"flag"
	"fmt"
	"io"
	"math/rand"
	"os"
	"slices"
	"time"
)

// line is a cache line's worth of uint64; a cycle's entries sit at the
// start of each line.
const line = 8

func main() {
	loads := flag.Int("loads", 4_000_000, "dependent loads timed per buffer and round")
	rounds := flag.Int("rounds", 5, "rounds per buffer; the median is printed with the range")
	flag.Parse()
	if *loads < 1 || *rounds < 1 {
		fmt.Fprintln(os.Stderr, "memlat: -loads and -rounds must be at least 1")
		os.Exit(2)
	}
	if err := table(os.Stdout, []int{1, 8, 32, 128, 512}, *loads, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "memlat:", err)
		os.Exit(1)
	}
}

// table prints, for each buffer size in MiB, the median and range of ns
// per dependent load over rounds.
func table(w io.Writer, sizesMiB []int, loads, rounds int) error {
	fmt.Fprintf(w, "| buffer MiB | ns per dependent load, median [min–max] of %d rounds |\n|---|---|\n", rounds)
	rng := rand.New(rand.NewSource(1))
	for _, mib := range sizesMiB {
		buf := cycle(mib<<20/(line*8), rng)
		ns := make([]float64, rounds)
		for r := range ns {
			ns[r] = walk(buf, loads)
		}
		slices.Sort(ns)
		if _, err := fmt.Fprintf(w, "| %d | %.0f [%.0f–%.0f] |\n", mib, ns[len(ns)/2], ns[0], ns[len(ns)-1]); err != nil {
			return err
		}
	}
	return nil
}

// cycle returns lines 64-byte lines whose first words link them into one
// random cycle through all of them: each holds the index of the next.
func cycle(lines int, rng *rand.Rand) []uint64 {
	buf := make([]uint64, lines*line)
	order := rng.Perm(lines)
	for i, l := range order {
		buf[l*line] = uint64(order[(i+1)%lines] * line)
	}
	return buf
}

// walk follows buf's cycle for loads steps and returns ns per step.
func walk(buf []uint64, loads int) float64 {
	p := uint64(0)
	start := time.Now()
	for range loads {
		p = buf[p]
	}
	d := time.Since(start)
	sink = p
	return float64(d.Nanoseconds()) / float64(loads)
}

// sink keeps the walk's last index, so the loop is not removed.
var sink uint64

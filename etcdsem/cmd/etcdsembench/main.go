// Command etcdsembench measures etcdsem across OS processes on one machine,
// against a real etcd started from its Go module in this process: grants per
// second and acquire latency (p50, p99) of plain mode, block mode and etcd's
// concurrency.Mutex (capacity mutexes, each goroutine always taking the same
// one) for 1, 4 and 8 worker processes of 16 goroutines each, at capacity 64
// and 256, each grant held 100µs or 10ms; then plain against block mode when
// the processes want more than the capacity (contended.go): grants per second,
// latency, each process's units against its max-min share and the history's
// violations; then units moving between processes when demand shifts
// (shift.go): one process's load stops, and the time until another process is
// served, in etcd round trips; then three processes of different demands on
// one capacity, and the units each holds against its max-min share
// (split.go); then per-tenant limits on 1,000 keys, a Set per process
// against a Semaphore per key (keyed.go). -table, -contended, -shift, -split
// and -keyed choose the parts.
//
//	go -C etcdsem run ./cmd/etcdsembench              # everything, 3 runs each (some minutes)
//	go -C etcdsem run ./cmd/etcdsembench -quick       # one row per mode, one contended cell, the shift, the split and the keyed cell, 1 run (seconds)
//	go -C etcdsem run ./cmd/etcdsembench -runs 1 -procs 4 -capacity 256 -hold 100us
//
// Each row is the median of its runs, with the range of the runs after it.
// The worker processes and etcd share the machine's cores, so the numbers
// bound what a fleet on separate machines would see from below.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

func main() {
	if os.Getenv(workerEnv) != "" {
		runWorker()
		return
	}
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "etcdsembench:", err)
		os.Exit(1)
	}
}

// A config is one row of the table.
type config struct {
	procs    int
	capacity int64
	hold     time.Duration
	mode     string
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("etcdsembench", flag.ContinueOnError)
	quick := fs.Bool("quick", false, "one row per mode (4 processes, capacity 256, 100µs holds), one contended cell, the shift, the split and the keyed cell on 100 keys, 1 run of 1s (unless -runs, -duration)")
	runs := fs.Int("runs", 3, "runs of each row; the row shows their median and range")
	dur := fs.Duration("duration", 3*time.Second, "the load of one run")
	goroutines := fs.Int("goroutines", 16, "goroutines per process")
	block := fs.Int64("block", 16, "block size in block mode")
	procsFlag := fs.String("procs", "1,4,8", "process counts, comma-separated")
	capsFlag := fs.String("capacity", "64,256", "capacities, comma-separated")
	holdsFlag := fs.String("hold", "100us,10ms", "hold times, comma-separated")
	modesFlag := fs.String("modes", "plain,blocks,mutex", "modes, comma-separated (the shift and the split run plain and blocks of them)")
	table := fs.Bool("table", true, "measure the table of processes, capacities, holds and modes")
	contended := fs.Bool("contended", true, "measure the contended cells (demand above the capacity), plain against blocks, when -modes has both")
	shift := fs.Bool("shift", true, "measure the shift of demand between two processes")
	split := fs.Bool("split", true, "measure how three processes of different demands share one capacity")
	keyed := fs.Bool("keyed", true, "measure per-tenant limits: a Set per process against a Semaphore per key, on 1,000 keys")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *quick {
		if !isSet(fs, "runs") {
			*runs = 1
		}
		if !isSet(fs, "duration") {
			*dur = time.Second
		}
		*procsFlag, *capsFlag, *holdsFlag = "4", "256", "100us"
	}
	if *runs < 1 || *dur <= 0 || *goroutines < 1 || *block < 1 {
		return errors.New("-runs, -duration, -goroutines and -block must be positive")
	}
	var cfgs []config
	procs, err := parseList(*procsFlag, strconv.Atoi)
	if err != nil {
		return err
	}
	caps, err := parseList(*capsFlag, func(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) })
	if err != nil {
		return err
	}
	holds, err := parseList(*holdsFlag, time.ParseDuration)
	if err != nil {
		return err
	}
	for _, p := range procs {
		for _, c := range caps {
			for _, h := range holds {
				for _, m := range strings.Split(*modesFlag, ",") {
					cfgs = append(cfgs, config{procs: p, capacity: c, hold: h, mode: m})
				}
			}
		}
	}

	e, err := startEtcd()
	if err != nil {
		return err
	}
	defer e.Close()
	b := &bench{endpoint: e.Config().ListenClientUrls[0].String(), goroutines: *goroutines, block: *block, dur: *dur, keys: 1000}
	if *quick {
		b.keys = 100
	}

	if *table {
		if err := b.printTable(out, *runs, *block, cfgs); err != nil {
			return err
		}
	}
	// The contended cells, the shift and the split are etcdsem's: plain and
	// block mode, as -modes asks.
	var semModes []string
	for _, m := range strings.Split(*modesFlag, ",") {
		if m == "plain" || m == "blocks" {
			semModes = append(semModes, m)
		}
	}
	if *contended && len(semModes) == 2 {
		if *quick {
			contendedCells = contendedCells[:1]
		}
		if err := b.printContended(out, *runs, holds); err != nil {
			return err
		}
	}
	if *shift && len(semModes) > 0 {
		if err := b.printShift(out, *runs, semModes); err != nil {
			return err
		}
	}
	if *split && len(semModes) > 0 {
		if err := b.printSplit(out, *runs, semModes); err != nil {
			return err
		}
	}
	if *keyed {
		if err := b.printKeyed(out, *runs); err != nil {
			return err
		}
	}
	return nil
}

// printTable runs each row of cfgs runs times and prints the table.
func (b *bench) printTable(out io.Writer, runs int, block int64, cfgs []config) error {
	fmt.Fprintf(out, "%d goroutines per process, block size %d, %v per run, median of %d runs [range]\n\n", b.goroutines, block, b.dur, runs)
	fmt.Fprintln(out, "| processes | capacity | hold | mode | grants/s | p50 acquire | p99 acquire |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|")
	for _, c := range cfgs {
		var rates []float64
		var p50s, p99s []time.Duration
		for range runs {
			res, err := b.load(c)
			if err != nil {
				return fmt.Errorf("%d processes, capacity %d, hold %v, %s: %w", c.procs, c.capacity, c.hold, c.mode, err)
			}
			rates = append(rates, res.rate)
			p50s = append(p50s, res.p50)
			p99s = append(p99s, res.p99)
		}
		fmt.Fprintf(out, "| %d | %d | %v | %s | %s | %s | %s |\n", c.procs, c.capacity, c.hold, c.mode,
			spread(rates, func(r float64) string { return strconv.FormatFloat(r, 'f', 0, 64) }),
			spread(p50s, fmtDuration), spread(p99s, fmtDuration))
	}
	return nil
}

// A bench runs loads against one etcd.
type bench struct {
	endpoint   string
	goroutines int
	block      int64
	dur        time.Duration
	runs       int
	keys       int // of the keyed cell
}

type loadResult struct {
	rate     float64
	p50, p99 time.Duration
}

// load runs one row's load once, in fresh processes on a fresh semaphore.
func (b *bench) load(c config) (loadResult, error) {
	b.runs++
	name := fmt.Sprintf("etcdsembench/%d-%d", os.Getpid(), b.runs)
	start := time.Now().Add(2*time.Second + time.Duration(c.procs)*300*time.Millisecond)
	specs := make([]spec, c.procs)
	for i := range specs {
		specs[i] = spec{Endpoint: b.endpoint, Name: name, Mode: c.mode, Capacity: c.capacity, Block: b.block,
			Goroutines: b.goroutines, Hold: c.hold, Start: start, Duration: b.dur, Index: i}
	}
	results, err := runWorkers(specs)
	if err != nil {
		return loadResult{}, err
	}
	h := newHist()
	var grants int64
	for _, r := range results {
		h.merge(r.Latency)
		grants += r.Grants
	}
	return loadResult{rate: float64(grants) / b.dur.Seconds(), p50: h.quantile(0.5), p99: h.quantile(0.99)}, nil
}

// runWorkers starts one worker process per spec, waits for every result, and
// then ends them all (a worker holds its handle until then).
func runWorkers(specs []spec) ([]result, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	type proc struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		out   *bufio.Reader
	}
	procs := make([]proc, len(specs))
	defer func() {
		for _, p := range procs {
			if p.cmd != nil {
				p.stdin.Close()
				_ = p.cmd.Wait()
			}
		}
	}()
	for i, sp := range specs {
		env, err := json.Marshal(sp)
		if err != nil {
			return nil, err
		}
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), workerEnv+"="+string(env))
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		procs[i] = proc{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	}
	results := make([]result, len(specs))
	for i, p := range procs {
		line, err := p.out.ReadBytes('\n')
		if err != nil {
			return nil, fmt.Errorf("worker %d: no result: %w", i, err)
		}
		if err := json.Unmarshal(line, &results[i]); err != nil {
			return nil, fmt.Errorf("worker %d: %w", i, err)
		}
		if results[i].Errors > 0 {
			return nil, fmt.Errorf("worker %d: %d acquires or releases failed", i, results[i].Errors)
		}
	}
	return results, nil
}

// spread formats the median of xs and, with more than one, their range.
func spread[T float64 | time.Duration](xs []T, f func(T) string) string {
	s := slices.Clone(xs)
	slices.Sort(s)
	med := f(s[len(s)/2])
	if len(s) == 1 {
		return med
	}
	return med + " [" + f(s[0]) + "–" + f(s[len(s)-1]) + "]"
}

func fmtDuration(d time.Duration) string {
	switch {
	case d >= 10*time.Millisecond:
		return d.Round(time.Millisecond).String()
	case d >= 10*time.Microsecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(100 * time.Nanosecond).String()
}

// isSet reports whether the flag name was given.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func parseList[T any](s string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for _, f := range strings.Split(s, ",") {
		v, err := parse(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%q: %w", s, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// startEtcd starts a single-member etcd in this process, with its data in a
// temporary directory, as the tests do.
func startEtcd() (*embed.Etcd, error) {
	dir, err := os.MkdirTemp("", "etcdsembench-")
	if err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Dir = dir
	cu, pu := freeURL(), freeURL()
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{pu}, []url.URL{pu}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case <-ctx.Done():
		e.Close()
		return nil, errors.New("embedded etcd not ready after 30s")
	}
}

func freeURL() url.URL {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return url.URL{Scheme: "http", Host: l.Addr().String()}
}

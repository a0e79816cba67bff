package main

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// machine describes where a run happened.
type machine struct {
	nproc     int
	model     string
	memory    string
	kernel    string
	goVersion string
	coredns   string
	stock     string // empty without -stock
	apiserver string
	etcd      string
	dnsperf   string
}

func readMachine(coredns, stock string) machine {
	m := machine{nproc: runtime.NumCPU()}
	if out, err := exec.Command("nproc").Output(); err == nil {
		m.nproc, _ = strconv.Atoi(strings.TrimSpace(string(out)))
	}
	m.model = procField("/proc/cpuinfo", "model name")
	m.memory = procField("/proc/meminfo", "MemTotal")
	if kb, err := strconv.ParseUint(strings.TrimSuffix(m.memory, " kB"), 10, 64); err == nil {
		m.memory = strconv.FormatFloat(float64(kb)/(1<<20), 'f', 1, 64) + " GiB"
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.kernel = strings.TrimSpace(string(b))
	}
	m.goVersion = firstLine("go", "version")
	m.coredns = strings.ReplaceAll(firstLine(coredns, "-version"), "\n", " ")
	if stock != "" {
		m.stock = firstLine(stock, "-version")
	}
	// dnsperf prints its version last in its help text.
	if out, _ := exec.Command("dnsperf", "-h").CombinedOutput(); len(out) > 0 {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		m.dnsperf = strings.TrimSpace(lines[len(lines)-1])
	}
	return m
}

// procField is the value of the first "key : value" line of a /proc file.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// firstLine runs a command and returns the first line of its output.
func firstLine(name string, args ...string) string {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil && len(out) == 0 {
		return "unknown (" + err.Error() + ")"
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}

// loadAverage is the 1-minute load average.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// loadSampler records the 1-minute load average throughout a run.
type loadSampler struct {
	mu      sync.Mutex
	samples []float64
	done    chan struct{}
	wg      sync.WaitGroup
}

func startLoadSampler(every time.Duration) *loadSampler {
	s := &loadSampler{done: make(chan struct{}), samples: []float64{loadAverage()}}
	s.wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-t.C:
				s.mu.Lock()
				s.samples = append(s.samples, loadAverage())
				s.mu.Unlock()
			}
		}
	})
	return s
}

// stop ends sampling and returns the samples; it may be called on a nil
// sampler (a run that failed before sampling began).
func (s *loadSampler) stop() []float64 {
	if s == nil {
		return nil
	}
	close(s.done)
	s.wg.Wait()
	return s.samples
}

// Logs whose lines objects cause, bounded: their writers are not the
// operator, so a line is clipped, an object's problems are counted past a
// few, and each kind of line is written a limited number of times a window.

package multicluster

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// What the log says about objects is bounded, as their writers are not the
// operator: a line is at most maxLogLine octets, names at most maxProblems
// problems of one object, quotes at most maxQuoted octets of any value, and
// each kind of line is written at most limit times a window. An object with
// 10,000 bad port names, or one that flaps, costs the log a few lines.
const (
	maxProblems = 8
	maxQuoted   = 64
	maxLogLine  = 1024
)

// problemList gathers the problems of one object's conversion: the first
// maxProblems said in full, the rest counted.
type problemList struct {
	list    []string
	omitted int
}

func (p *problemList) add(format string, args ...any) {
	if len(p.list) >= maxProblems {
		p.omitted++
		return
	}
	p.list = append(p.list, fmt.Sprintf(format, args...))
}

// strings returns the problems, the count of those left out last.
func (p *problemList) strings() []string {
	if p.omitted == 0 {
		return p.list
	}
	return append(p.list, fmt.Sprintf("and %d more problems", p.omitted))
}

// short returns s cut to maxQuoted octets, saying how long it was, for a
// value quoted in a log line.
func short(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	return s[:maxQuoted] + "... (" + strconv.Itoa(len(s)) + " octets)"
}

// clip cuts a log line to maxLogLine octets.
func clip(line string) string {
	if len(line) <= maxLogLine {
		return line
	}
	return line[:maxLogLine] + "... (" + strconv.Itoa(len(line)) + " octets)"
}

// boundedLog writes at most limit lines a window (logWindow); the lines
// past it are counted, and said in one line when the next comes in a later
// window.
type boundedLog struct {
	mu sync.Mutex
	logWindow
	what  string       // what the lines are about, for the line of those left out
	write func(string) // the log level's writer
}

func newBoundedLog(what string, limit int, write func(string)) *boundedLog {
	return &boundedLog{logWindow: logWindow{window: time.Minute, limit: limit, now: time.Now}, what: what, write: write}
}

// printf writes a line, clipped, unless the window's lines are spent.
func (l *boundedLog) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, n := l.roll(); n > 0 {
		l.write(fmt.Sprintf("%d more %s were not logged in the last %s", n, l.what, l.window))
	}
	if l.take() {
		l.write(clip(fmt.Sprintf(format, args...)))
	}
}

// objectLog says what was skipped of objects: at most 100 lines a minute.
var objectLog = newBoundedLog("lines about skipped objects", 100, func(s string) { log.Warning(s) })

// joinProblems joins problems for one log line.
func joinProblems(problems []string) string { return strings.Join(problems, "; ") }

// logWindow bounds the lines a log writes: at most limit in each window;
// the rest are counted, and said in one line when the next line comes in a
// later window.
type logWindow struct {
	window     time.Duration
	limit      int
	start      time.Time
	lines      int
	suppressed int
	now        func() time.Time
}

// roll starts a new window when the current one is over, and reports
// whether it did, and how many lines the one before did not write.
func (w *logWindow) roll() (rolled bool, suppressed int) {
	now := w.now()
	if now.Sub(w.start) < w.window {
		return false, 0
	}
	suppressed = w.suppressed
	w.start, w.lines, w.suppressed = now, 0, 0
	return true, suppressed
}

// take reports whether one more line may be written in this window, and
// counts it as suppressed when not.
func (w *logWindow) take() bool {
	if w.lines >= w.limit {
		w.suppressed++
		return false
	}
	w.lines++
	return true
}

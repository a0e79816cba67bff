// The registry of running watchers, one per process: each with the caddy
// instance that started it, so that a failed reload's watchers can be found
// and stopped, and with its plugin, which the scrape-time gauges read.

package multicluster

import (
	"sync"

	"github.com/coredns/caddy"
)

// instanceMark marks, in a caddy instance's storage, the instance whose
// plugin blocks started a watcher.
type instanceMark struct{ _ byte } // not zero-sized: every mark is distinct

type instanceMarkKey struct{}

// markOf returns the mark of c's instance, set by its first multicluster
// block.
func markOf(c *caddy.Controller) *instanceMark {
	if mark, ok := c.Get(instanceMarkKey{}).(*instanceMark); ok {
		return mark
	}
	mark := &instanceMark{}
	c.Set(instanceMarkKey{}, mark)
	return mark
}

// running holds every watcher started and not yet stopped, with the mark of
// the instance that started it, so that what a failed reload leaves behind
// can be found. Like the prometheus plugin's registry of listeners, it is
// one per process because caddy instances come and go within one.
var running = &runningWatchers{owner: map[*watcher]runningWatcher{}}

type runningWatchers struct {
	mu    sync.Mutex
	owner map[*watcher]runningWatcher
}

// runningWatcher is a running watcher's instance mark, and the plugin it
// feeds, whose state the state gauges read (gauges.go).
type runningWatcher struct {
	mark   *instanceMark
	plugin *Multicluster
}

func (r *runningWatchers) add(m *Multicluster, mark *instanceMark) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.owner[m.watch] = runningWatcher{mark: mark, plugin: m}
}

// plugins returns the plugins whose watchers run.
func (r *runningWatchers) plugins() []*Multicluster {
	r.mu.Lock()
	defer r.mu.Unlock()
	ms := make([]*Multicluster, 0, len(r.owner))
	for _, rw := range r.owner {
		ms = append(ms, rw.plugin)
	}
	return ms
}

func (r *runningWatchers) remove(w *watcher) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.owner, w)
}

// stopOrphans stops every running watcher whose instance caddy no longer
// holds: one that failed to start, or (a restart failing in an old
// instance's OnShutdown) one that was stopping. The instance that serves
// keeps its watchers.
func (r *runningWatchers) stopOrphans() {
	alive := map[*instanceMark]bool{}
	for _, inst := range caddy.Instances() {
		inst.StorageMu.RLock()
		if mark, ok := inst.Storage[instanceMarkKey{}].(*instanceMark); ok {
			alive[mark] = true
		}
		inst.StorageMu.RUnlock()
	}
	r.mu.Lock()
	var orphans []*watcher
	for w, rw := range r.owner {
		if !alive[rw.mark] {
			orphans = append(orphans, w)
			delete(r.owner, w)
		}
	}
	r.mu.Unlock()
	for _, w := range orphans {
		w.stop()
	}
	if len(orphans) > 0 {
		log.Infof("Stopped the informers of %d server block(s) of an instance that is not serving after a failed reload", len(orphans))
	}
}

//go:build race

package multicluster

// raceEnabled: the race detector slows every memory access several times,
// so that tests of CPU time do not hold under it.
const raceEnabled = true

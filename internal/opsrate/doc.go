// Package opsrate measures how many times a second this machine runs an
// operation, for the figures bench and the eventlog benchmarks print beside
// their own: the median of seven bursts, so that one burst preempted on a
// shared machine does not set the figure. [Median] runs the operation on one
// goroutine, [MedianParallel] on several at once.
//
// It imports only the standard library, so any package of the module (and
// any package's tests) may use it.
package opsrate

package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress draws a bar on stderr while a long walk of the chain runs, only when
// stderr is a terminal, so scripts and CI logs never see one. total is the
// number of events when known, -1 otherwise. It returns the callback for
// eventlog's progress parameter (nil when there is no bar) and a function that
// removes the bar.
func (m *Main) progress(desc string, total int64) (func(seq uint64), func()) {
	if !isTerminal(m.Stderr) {
		return nil, func() {}
	}
	bar := progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(m.Stderr),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("events"),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
	return func(seq uint64) { bar.Set64(int64(seq)) }, func() { bar.Finish() }
}

// treeBuildBar draws the one-time build of the Merkle tree at start (a data
// dir from before it) as a bar on stderr when it is a terminal; nil otherwise,
// when the log lines of treeBuildProgress are the progress.
func (m *Main) treeBuildBar() func(done, total uint64) {
	if !isTerminal(m.Stderr) {
		return nil
	}
	var set func(seq uint64)
	var finish func()
	return func(done, total uint64) {
		if set == nil {
			set, finish = m.progress("building the merkle tree", int64(total))
		}
		set(done)
		if done == total {
			finish()
		}
	}
}

// progressReader wraps r in a byte-counting bar of size bytes when stderr is a
// terminal; it is used for bundles read from a file, whose event count is only
// known at its end.
func (m *Main) progressReader(desc string, r io.Reader, size int64) (io.Reader, func()) {
	if !isTerminal(m.Stderr) {
		return r, func() {}
	}
	bar := progressbar.NewOptions64(size,
		progressbar.OptionSetWriter(m.Stderr),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowBytes(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
	pr := progressbar.NewReader(r, bar)
	return &pr, func() { bar.Finish() }
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// byteProgress draws a bar of bytes copied on stderr when it is a terminal,
// for a copy whose size is known once it starts (backup, restore). It returns
// the callback (nil when there is no bar) and a function that removes the bar.
func (m *Main) byteProgress(desc string) (func(done, total int64), func()) {
	if !isTerminal(m.Stderr) {
		return nil, func() {}
	}
	var bar *progressbar.ProgressBar
	return func(done, total int64) {
			if bar == nil {
				bar = progressbar.NewOptions64(total,
					progressbar.OptionSetWriter(m.Stderr),
					progressbar.OptionSetDescription(desc),
					progressbar.OptionShowBytes(true),
					progressbar.OptionThrottle(100*time.Millisecond),
					progressbar.OptionClearOnFinish(),
				)
			}
			bar.Set64(done)
		}, func() {
			if bar != nil {
				bar.Finish()
			}
		}
}

// bundleInput opens an export bundle at path, or stdin for "-", with a bar on
// a terminal: of bytes for a file, of events for stdin, whose size shows only
// at its end. done removes the bar and closes the file.
func (m *Main) bundleInput(desc, path string) (r io.Reader, progress func(uint64), done func(), err error) {
	if path == "-" {
		progress, done = m.progress(desc, -1)
		return m.Stdin, progress, done, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("open bundle: %w", err)
	}
	r, bar := io.Reader(f), func() {}
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		r, bar = m.progressReader(desc, f, fi.Size())
	}
	return r, nil, func() { bar(); f.Close() }, nil
}

// Package testtool is for tests that need a program this module does not
// build: node, Chromium, npm packages, systemd-analyze, a module only the
// proxy has. Missing says such a test cannot run here; Need looks a program
// up on PATH and calls Missing without it.
//
// A missing program skips the test on a developer's machine, with a message
// that says what to install, and fails it under CI (CI=true), whose .ci/run
// installs every one: a green CI run has run every test.
package testtool

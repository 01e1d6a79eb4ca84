package main

import (
	"errors"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/civnode/civnode/cmd/civnode/internal/configfile"
	"github.com/civnode/civnode/internal/logkey"
)

// envPrefix starts the environment variable of each serve flag: --rate-limit
// is CIVNODE_RATE_LIMIT.
const envPrefix = "CIVNODE_"

// configFlag names the config file; it is read from the command line or
// $CIVNODE_CONFIG only, never from a config file.
const configFlag = "config"

// envName is the environment variable that stands for the flag name.
func envName(flag string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// lookupEnv is Main.LookupEnv, or, for a Main built without it, Getenv where
// an empty value means unset.
func (m *Main) lookupEnv(name string) (string, bool) {
	if m.LookupEnv != nil {
		return m.LookupEnv(name)
	}
	v := m.Getenv(name)
	return v, v != ""
}

// applyServeSources sets each flag of fs that the command line left alone
// from its environment variable, or else from the config file (--config or
// $CIVNODE_CONFIG), so that a flag wins over the environment, which wins over
// the file, which wins over the flag's default. A variable that is set but
// empty counts, so CIVNODE_REGISTRY_URL= sets --registry-url to "".
func (m *Main) applyServeSources(fs *pflag.FlagSet) error {
	fromFile := map[string]string{}
	path, _ := fs.GetString(configFlag)
	if !fs.Changed(configFlag) {
		path, _ = m.lookupEnv(envName(configFlag))
	}
	if path != "" {
		var err error
		if fromFile, err = configfile.Read(path, fs, configFlag, "help"); err != nil {
			return usageError{err}
		}
	}
	var errs []error
	// A list from the environment or the file is its items joined with
	// commas; a flag that repeats (--witness) takes them one by one.
	set := func(f *pflag.Flag, v string) error {
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			items := []string{}
			if v != "" {
				items = strings.Split(v, ",")
			}
			return sv.Replace(items)
		}
		return fs.Set(f.Name, v)
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed || f.Name == configFlag || f.Name == "help" {
			return
		}
		if v, ok := m.lookupEnv(envName(f.Name)); ok {
			if err := set(f, v); err != nil {
				errs = append(errs, usageErrorf("$%s: %v", envName(f.Name), err))
			}
			return
		}
		if v, ok := fromFile[f.Name]; ok {
			if err := set(f, v); err != nil {
				errs = append(errs, usageErrorf("config %s: %s: %v", path, f.Name, err))
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return m.warnServeSources(fs, path, fromFile)
}

// warnServeSources logs what in serve's sources is likely a mistake but no
// reason to refuse to start: a config file that holds a secret where group or
// others may read it, as the node warns of its own key and token files, and a
// CIVNODE_ variable that names no setting, which would otherwise be ignored
// without a word, as a mistyped key in the file is not. It logs names, never
// a value. The logger is the one serve is about to use, built from the log
// flags as the sources left them.
func (m *Main) warnServeSources(fs *pflag.FlagSet, path string, fromFile map[string]string) error {
	var exposed []string
	var perm os.FileMode
	if secrets := configSecrets(fromFile); len(secrets) > 0 {
		if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o044 != 0 {
			exposed, perm = secrets, fi.Mode().Perm()
		}
	}
	unknown := m.unknownEnv(fs)
	if len(exposed) == 0 && len(unknown) == 0 {
		return nil
	}
	g := &globals{logLevel: "info", logFormat: "text"}
	if f := fs.Lookup("log-level"); f != nil {
		g.logLevel = f.Value.String()
	}
	if f := fs.Lookup("log-format"); f != nil {
		g.logFormat = f.Value.String()
	}
	logger, err := m.logger(g)
	if err != nil {
		return err
	}
	if len(exposed) > 0 {
		logger.Warn("config file holds secrets and is readable by group or others; chmod 600 it",
			logkey.Path, path, logkey.Mode, perm.String(), logkey.Settings, strings.Join(exposed, ","))
	}
	for _, name := range unknown {
		logger.Warn("unknown environment variable, ignored (serve's are CIVNODE_ and a flag's name in upper case, _ for -)",
			logkey.Variable, name)
	}
	return nil
}

// secretSetting is the setting of serve whose value is itself a credential.
const secretSetting = "mirror-token"

// urlSettings are serve's settings that take a URL, whose user info (nats://
// user:password@hub:7422) is a credential.
var urlSettings = []string{"nats-leaf", "mirror-of", "registry-url"}

// configSecrets are the names of the settings of a config file that hold a
// credential, sorted.
func configSecrets(fromFile map[string]string) []string {
	var out []string
	for name, v := range fromFile {
		switch {
		case v == "":
		case name == secretSetting:
			out = append(out, name)
		case slices.Contains(urlSettings, name):
			if u, err := url.Parse(v); err == nil && u.User != nil {
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// otherEnv are the CIVNODE_ variables read elsewhere than serve's flags: by
// other commands, and by the tests, benchmarks and CI scripts, which may run
// serve with them set. A name used anywhere in the repository belongs here
// or to a flag of serve (TestEnvKnownList).
var otherEnv = []string{
	"CIVNODE_TOKEN", // transparency check and prove, the docs' examples
	// Tests, benchmarks and .ci/run.
	"CIVNODE_AGENT",
	"CIVNODE_CHROMIUM",
	"CIVNODE_CLAIMER",
	"CIVNODE_EVENTS",
	"CIVNODE_FAULT_ROUNDS",
	"CIVNODE_FUZZTIME",
	"CIVNODE_MIRROR_FANOUT",
	"CIVNODE_MIRROR_SCALE",
	"CIVNODE_NO_REGISTRY_URL",
	"CIVNODE_OBSERVER_TOKEN",
	"CIVNODE_SCREENSHOT",
	"CIVNODE_SCREENSHOT_PHONE",
	"CIVNODE_SOAK",
	"CIVNODE_SOAK_PROFILE",
	"CIVNODE_STATE_BENCH_MISSIONS",
	"CIVNODE_TREE_BENCH_EVENTS",
	"CIVNODE_UPDATE_SCREENSHOT",
	"CIVNODE_URL",
}

// knownEnv is every CIVNODE_ variable civnode or its tests read: one for
// each flag of fs, serve's, and otherEnv.
func knownEnv(fs *pflag.FlagSet) map[string]bool {
	known := map[string]bool{}
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name != "help" {
			known[envName(f.Name)] = true
		}
	})
	for _, name := range otherEnv {
		known[name] = true
	}
	return known
}

// unknownEnv are the names of the CIVNODE_ variables of the environment that
// knownEnv does not hold, sorted; none for a Main without Environ.
func (m *Main) unknownEnv(fs *pflag.FlagSet) []string {
	if m.Environ == nil {
		return nil
	}
	known := knownEnv(fs)
	var out []string
	for _, kv := range m.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, envPrefix) && !known[name] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

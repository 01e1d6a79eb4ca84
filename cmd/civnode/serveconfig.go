package main

import (
	"errors"
	"strings"

	"github.com/spf13/pflag"

	"github.com/civnode/civnode/cmd/civnode/internal/configfile"
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
	return errors.Join(errs...)
}

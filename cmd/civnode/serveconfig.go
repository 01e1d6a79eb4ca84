package main

import (
	"errors"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
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
		if fromFile, err = readServeConfig(path, fs); err != nil {
			return err
		}
	}
	var errs []error
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed || f.Name == configFlag || f.Name == "help" {
			return
		}
		if v, ok := m.lookupEnv(envName(f.Name)); ok {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, usageErrorf("$%s: %v", envName(f.Name), err))
			}
			return
		}
		if v, ok := fromFile[f.Name]; ok {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, usageErrorf("config %s: %s: %v", path, f.Name, err))
			}
		}
	})
	return errors.Join(errs...)
}

// readServeConfig reads a YAML config file: one mapping whose keys are the
// names of serve's flags and whose values are what the flag would take, a
// list for a flag that takes a comma-separated list. A key that names no
// flag is refused, so that a typo does not pass for a default.
func readServeConfig(path string, fs *pflag.FlagSet) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, usageErrorf("config: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, usageErrorf("config %s: %w", path, err)
	}
	out := map[string]string{}
	if len(doc.Content) == 0 {
		return out, nil // an empty file, or only comments
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		return nil, usageErrorf("config %s: want a mapping of flag names to values", path)
	}
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		name := k.Value
		if f := fs.Lookup(name); f == nil || name == configFlag || name == "help" {
			return nil, usageErrorf("config %s:%d: unknown setting %q (the keys are serve's flag names)", path, k.Line, name)
		}
		if _, dup := out[name]; dup {
			return nil, usageErrorf("config %s:%d: %s is set twice", path, k.Line, name)
		}
		val, err := configValue(v)
		if err != nil {
			return nil, usageErrorf("config %s:%d: %s: %v", path, v.Line, name, err)
		}
		out[name] = val
	}
	return out, nil
}

// configValue is a YAML value as the flag's text: a scalar as written (null
// as ""), a list of scalars joined with commas.
func configValue(v *yaml.Node) (string, error) {
	switch v.Kind {
	case yaml.ScalarNode:
		if v.ShortTag() == "!!null" {
			return "", nil
		}
		return v.Value, nil
	case yaml.SequenceNode:
		items := make([]string, 0, len(v.Content))
		for _, it := range v.Content {
			if it.Kind != yaml.ScalarNode || strings.Contains(it.Value, ",") {
				return "", errors.New("a list holds plain values without commas")
			}
			items = append(items, it.Value)
		}
		return strings.Join(items, ","), nil
	}
	return "", errors.New("want a value or a list of values")
}

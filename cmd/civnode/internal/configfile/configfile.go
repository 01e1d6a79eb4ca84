package configfile

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// Read reads the YAML config file at path: one mapping whose keys are the
// names of flags of fs and whose values are what the flag would take, a list
// for a flag that takes a comma-separated list. It returns each value as the
// flag's text. A key that names no flag, or one of except, is refused, so
// that a typo does not pass for a default.
func Read(path string, fs *pflag.FlagSet, except ...string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	out := map[string]string{}
	if len(doc.Content) == 0 {
		return out, nil // an empty file, or only comments
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("config %s: want a mapping of flag names to values", path)
	}
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		name := k.Value
		if f := fs.Lookup(name); f == nil || slices.Contains(except, name) {
			return nil, fmt.Errorf("config %s:%d: unknown setting %q (the keys are serve's flag names)", path, k.Line, name)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("config %s:%d: %s is set twice", path, k.Line, name)
		}
		val, err := configValue(v)
		if err != nil {
			return nil, fmt.Errorf("config %s:%d: %s: %v", path, v.Line, name, err)
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

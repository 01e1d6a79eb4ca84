package commands

import (
	"fmt"
	"strings"
	"testing"
)

// TestSchemaLimits: one answer lists at most maxViolations violations, and
// the compiled-schema cache holds at most maxSchemas schemas (docs/limits.md).
func TestSchemaLimits(t *testing.T) {
	c := newSchemaCache()
	var props []string
	for i := range maxViolations + 50 {
		props = append(props, fmt.Sprintf("%q", fmt.Sprintf("p%d", i)))
	}
	schema := `{"type":"object","required":[` + strings.Join(props, ",") + `]}`
	v, err := c.validate([]byte(schema), []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(v) == 0 || len(v) > maxViolations {
		t.Errorf("%d violations listed for %d missing properties, want 1..%d", len(v), maxViolations+50, maxViolations)
	}

	for i := range maxSchemas + 10 {
		if _, err := c.compile([]byte(fmt.Sprintf(`{"type":"object","maxProperties":%d}`, i))); err != nil {
			t.Fatal(err)
		}
		if n := len(c.schemas); n > maxSchemas {
			t.Fatalf("the cache holds %d schemas, over %d", n, maxSchemas)
		}
	}
}

// TestLimitDigits: a payment-account limit has at most maxLimitDigits digits,
// which hold any uint256.
func TestLimitDigits(t *testing.T) {
	max := strings.Repeat("9", maxLimitDigits)
	if _, err := ParseLimit("max_per_day", max); err != nil {
		t.Errorf("%d digits refused: %v", maxLimitDigits, err)
	}
	for _, bad := range []string{max + "9", "", "-1", "01", "1.5", "1e3", " 1"} {
		if _, err := ParseLimit("max_per_day", bad); err == nil {
			t.Errorf("limit %q accepted", bad)
		}
	}
}

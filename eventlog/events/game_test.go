package events

import (
	"encoding/json"
	"testing"
)

// TestGamePayloadSchema freezes the JSON of the game's payloads: field names and
// types are a persisted schema and must never change.
func TestGamePayloadSchema(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{StarterMissionsInstalled{CatalogVersion: "2026.11.1", SubnetID: "genesis", TemplateIDs: []string{"a", "b"},
			MissionIDs: []string{"m1", "m2"}, InstalledBy: "did:key:zN"},
			`{"catalog_version":"2026.11.1","subnet_id":"genesis","template_ids":["a","b"],"mission_ids":["m1","m2"],` +
				`"installed_by":"did:key:zN"}`},
		{MissionPackInstalled{CatalogVersion: "2026.11.1", PackID: "p", SubnetID: "genesis", TemplateIDs: []string{"c"},
			MissionIDs: []string{"m3"}, InstalledBy: "did:key:zN"},
			`{"catalog_version":"2026.11.1","pack_id":"p","subnet_id":"genesis","template_ids":["c"],"mission_ids":["m3"],` +
				`"installed_by":"did:key:zN"}`},
	} {
		got, err := json.Marshal(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("%T = %s\n want %s", tc.v, got, tc.want)
		}
	}
}

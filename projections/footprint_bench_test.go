package projections_test

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"testing"

	"github.com/civnode/civnode/cmd/core"
	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/eventlog"
)

// BenchmarkFootprint measures what one entity costs: the logical bytes (keys and
// values, before Pebble's compression) it adds to the model space, and the Go
// heap the node holds after b.N of them, which stays flat because no entity is
// kept in memory. Run it at two sizes to see that heap_B does not follow N:
//
//	go test ./projections -run '^$' -bench Footprint -benchtime 1000x
//	go test ./projections -run '^$' -bench Footprint -benchtime 20000x
func BenchmarkFootprint(b *testing.B) {
	for _, kind := range []string{"identity", "mission_created", "mission_settled"} {
		b.Run(kind, func(b *testing.B) {
			c, err := core.Open(eventlog.Options{Dir: b.TempDir(), Key: ed25519.NewKeyFromSeed(make([]byte, 32)),
				Logger: slog.New(slog.DiscardHandler)}, core.Config{})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			ctx := context.Background()
			owner := commands.Actor{Kind: commands.ActorOwner, TokenID: "owner", Governs: []string{"genesis"}}
			var claimer string
			if kind == "mission_settled" {
				res, err := c.Identity.Bootstrap(ctx, owner, commands.BootstrapInput{DisplayName: "Worker", PublicID: ptr("worker")})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := c.Identity.UpdateControllerBinding(ctx, owner, commands.ControllerBindingInput{
					AgentDID: res.AgentDID, ControllerKind: "local_model", ControllerRef: "gpu-0"}); err != nil {
					b.Fatal(err)
				}
				claimer = "worker"
			}
			before := spaceBytes(b, c.Log)
			v := func(n int64) *int64 { return &n }
			b.ResetTimer()
			for i := range b.N {
				if kind == "identity" {
					if _, err := c.Identity.Bootstrap(ctx, owner, commands.BootstrapInput{DisplayName: fmt.Sprintf("Agent %d", i)}); err != nil {
						b.Fatal(err)
					}
					continue
				}
				res, err := c.Mission.Create(ctx, owner, commands.CreateMissionInput{Title: "Survey the belt",
					Description: strings.Repeat("Survey the outer belt and report. ", 8), Publisher: "genesis",
					PublisherKind: "planetary_government", Domain: "research", SubnetID: "genesis",
					Reward: &commands.RewardInput{AgentCredit: v(10), Reputation: v(2), Capacity: v(1), TreasuryShareCredit: v(4)}})
				if err != nil {
					b.Fatal(err)
				}
				if claimer == "" {
					continue
				}
				result := "surveyed"
				for _, step := range []func() error{
					func() error {
						_, err := c.Mission.Claim(ctx, owner, res.MissionID, commands.ClaimMissionInput{Claimer: claimer})
						return err
					},
					func() error {
						_, err := c.Mission.Complete(ctx, owner, res.MissionID, commands.CompleteMissionInput{Result: &result})
						return err
					},
					func() error {
						_, err := c.Mission.Settle(ctx, owner, res.MissionID, commands.SettleMissionInput{})
						return err
					},
				} {
					if err := step(); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(spaceBytes(b, c.Log)-before)/float64(b.N), "model_B/entity")
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(ms.HeapInuse), "heap_B")
		})
	}
}

// spaceBytes sums the keys and values of the live model space.
func spaceBytes(b *testing.B, l *eventlog.Log) int {
	b.Helper()
	v, err := l.ModelView()
	if err != nil {
		b.Fatal(err)
	}
	defer v.Close()
	n := 0
	if err := v.Scan(nil, nil, false, func(k, val []byte) (bool, error) {
		n += len(k) + len(val)
		return true, nil
	}); err != nil {
		b.Fatal(err)
	}
	return n
}

package servicenet

import (
	"fmt"
	"math/big"
	"strings"
)

// x402 names a network two ways: v1 by a short name ("base-sepolia"), v2 by
// its CAIP-2 id ("eip155:84532"). A node configured with either name must be
// able to pay a registry that uses the other, so both reduce to the EIP-155
// chain id, which is also what the EIP-712 domain signs.

// v1Networks is the x402 v1 EVM network names and their chain ids, as the
// x402 reference implementation defines them. A name missing here can still
// be used in its eip155:<chainId> form.
var v1Networks = map[string]int64{
	"ethereum":           1,
	"sepolia":            11155111,
	"base":               8453,
	"base-sepolia":       84532,
	"polygon":            137,
	"polygon-amoy":       80002,
	"avalanche":          43114,
	"avalanche-fuji":     43113,
	"abstract":           2741,
	"abstract-testnet":   11124,
	"iotex":              4689,
	"sei":                1329,
	"sei-testnet":        1328,
	"peaq":               3338,
	"story":              1514,
	"educhain":           41923,
	"skale-base-sepolia": 324705682,
}

const caip2EVMPrefix = "eip155:"

// ChainID is the EIP-155 chain id of an x402 EVM network, named either by its
// v1 name or as CAIP-2 "eip155:<chainId>".
func ChainID(network string) (*big.Int, error) {
	if id, ok := v1Networks[network]; ok {
		return big.NewInt(id), nil
	}
	ref, ok := strings.CutPrefix(network, caip2EVMPrefix)
	if !ok {
		return nil, fmt.Errorf("network %q: not a known EVM network", network)
	}
	// CAIP-2 limits a reference to 32 characters; EIP-155 makes it a positive
	// decimal integer. A leading zero would give one chain two names.
	if ref == "" || len(ref) > 32 || ref[0] == '0' || !isDecimal(ref) {
		return nil, fmt.Errorf("network %q: chain id is not a positive decimal integer", network)
	}
	id, _ := new(big.Int).SetString(ref, 10)
	return id, nil
}

// sameNetwork reports whether two network names denote the same network:
// equal names, or two EVM names for one chain id.
func sameNetwork(a, b string) bool {
	if a == b {
		return true
	}
	ida, err := ChainID(a)
	if err != nil {
		return false
	}
	idb, err := ChainID(b)
	if err != nil {
		return false
	}
	return ida.Cmp(idb) == 0
}

// isDecimal reports whether s is one or more ASCII digits.
func isDecimal(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

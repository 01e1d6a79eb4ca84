package servicenet

import (
	"fmt"
	"strings"

	"github.com/ethereum/go-ethereum/common"
)

// parseAddress reads a 0x-prefixed 20-byte EVM address. A mixed-case address
// must carry a valid EIP-55 checksum, the rule viem's getAddress applies: a
// registry's payTo with one mistyped character is refused instead of paid.
// All-lowercase and all-uppercase addresses carry no checksum and are taken
// as they are.
func parseAddress(s string) (common.Address, error) {
	hexPart, ok := strings.CutPrefix(s, "0x")
	if !ok || !common.IsHexAddress(s) {
		return common.Address{}, fmt.Errorf("address %q: not a 0x-prefixed 20-byte hex address", s)
	}
	addr := common.HexToAddress(s)
	if hexPart != strings.ToLower(hexPart) && hexPart != strings.ToUpper(hexPart) && addr.Hex() != s {
		return common.Address{}, fmt.Errorf("address %q: bad EIP-55 checksum", s)
	}
	return addr, nil
}

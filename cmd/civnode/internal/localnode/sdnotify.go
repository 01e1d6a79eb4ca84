package localnode

import (
	"fmt"
	"net"
)

// Notify sends state, newline-separated KEY=VALUE assignments such as
// "READY=1", to the service manager's notification socket at path
// (sd_notify(3): $NOTIFY_SOCKET, which systemd sets for a unit of
// Type=notify); with no path, it does nothing. A name starting with @ is in
// Linux's abstract namespace, which the net package maps itself. This is the
// whole of the protocol the node needs: one datagram a state change, no
// library.
func Notify(path, state string) error {
	if path == "" {
		return nil
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("notify the service manager: %w", err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(state)); err != nil {
		return fmt.Errorf("notify the service manager: %w", err)
	}
	return nil
}

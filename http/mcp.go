package http

// mcpRoutes registers POST /mcp (being written).
func (s *Server) mcpRoutes() {}

package localnode

import (
	"fmt"
	"io"
	"os"

	"github.com/civnode/civnode/commands/catalog"
)

// LoadCatalog returns the game catalog serve runs with: the file at path (serve
// --catalog), or the catalog built into the binary when path is empty. A file
// that is not a valid catalog is an error naming the file, then the JSON path of
// the field at fault, so the operator knows where to look before anything starts.
func LoadCatalog(path string) (*catalog.Catalog, error) {
	if path == "" {
		return catalog.Default(), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	defer f.Close()
	// One byte over the limit is enough for Parse to refuse an oversized file
	// without reading all of it.
	data, err := io.ReadAll(io.LimitReader(f, catalog.MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", path, err)
	}
	c, err := catalog.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", path, err)
	}
	return c, nil
}

// Package udf is the shape of Talaria's computed columns (see ../shared/seeds/talaria-go-plugin-vs-lua.txt):
// a loader turns user code into a Handler, and the Handler computes one value per ingested row.
package udf

// Row is one ingested event as a computed column sees it.
type Row = map[string]any

// Handler is Talaria's loader interface: Load returns a handler ready to compute, String names the
// mechanism, Value computes the column for one row.
type Handler interface {
	Load(uriOrCode string) (Handler, error)
	String() string
	Value(row Row) (any, error)
}

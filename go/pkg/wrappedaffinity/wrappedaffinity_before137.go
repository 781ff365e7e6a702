//go:build kubernetes1.35 || kubernetes1.36

package wrappedaffinity

import "schedgate/pkg/since137"

// New refuses: the plugin is written against 1.37's framework API (its mutants run on the pinned version).
var New = since137.Refuse(Name)

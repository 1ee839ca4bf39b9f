package userquota

import "github.com/userquota/userquota/pkg/podmeta"

// Temporary, while test/integration is being moved to pkg/podmeta.
const (
	AnnotationUserInfo = podmeta.AnnotationUserInfo
	LabelQueue         = podmeta.LabelQueue
	LabelAppID         = podmeta.LabelAppID
	LabelPreemptible   = podmeta.LabelPreemptible
)

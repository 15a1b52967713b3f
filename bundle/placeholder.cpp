// Placeholder so the bundle library has a translation unit until its first real source lands; delete it then.

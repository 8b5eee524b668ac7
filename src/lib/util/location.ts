/**
 * @file Locations (URLs, paths) compared and shown without their trailing slashes: a folder
 * named `static/models/x/` and `static/models/x` are the same model.
 */

/** `location` without the slashes it ends with ('a/b//' -> 'a/b'). */
export const withoutTrailingSlash = (location: string): string => location.replace(/\/+$/, '');

/*
 * position.c: position fields, Vespa's geographical points.
 *
 * A position is kept as one long: the latitude in millionths of a degree
 * (y) in the high 32 bits, the longitude (x) in the low 32 bits, so that a
 * position attribute is a column like any long.  It is fed as {"lat": 63.4,
 * "lng": 10.4} (degrees), as "N63.4;E10.4" (N/S and E/W, degrees), or in
 * the legacy {"x": 10400000, "y": 63400000} (millionths), and shown as
 * {"lat": 63.4, "lng": 10.4}.
 *
 * YQL geoLocation(field, lat, lng, "radius") keeps the documents whose
 * position lies within radius of the point ("10 km", "500 m", "5 mi",
 * "0.5 deg"; a negative radius keeps every document with a position).  As in
 * Vespa the distance is Euclidean in millionths of a degree, the longitude
 * difference scaled by the cosine of the query's latitude (good for local
 * search, not across the globe); a kilometre is 1 / 0.00011119508 of them.
 * The rank features distance(field) (that distance; 6400000000 without a
 * geoLocation on the field, or a document without a position),
 * distance(field).km, .latitude and .longitude (the document's position),
 * and closeness(field) = max(1 - distance / 9013305, 0) read it (fieldtypes.c
 * finds the geoLocation on the field and hands it here).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../engine_int.h"

#define KM_PER_MICRODEG 0.00011119508 /* Vespa's distance(f).km factor */
#define NO_DISTANCE 6400000000.0      /* distance(f) without a position */
#define MAX_DISTANCE 9013305.0        /* closeness(f)'s maxDistance (about 1000 km) */

static int64_t pack(int32_t lat, int32_t lng)
{
	return (int64_t)((uint64_t)(uint32_t)lat << 32 | (uint32_t)lng);
}

static void unpack(int64_t v, double *lat, double *lng)
{
	*lat = (int32_t)(uint32_t)((uint64_t)v >> 32);
	*lng = (int32_t)(uint32_t)((uint64_t)v & 0xffffffffu);
}

/* "N63.4;E10.4": the two signed coordinates in degrees; 0 or -1. */
static int parse_text(const char *s, double *lat, double *lng)
{
	double v[2];
	int seen[2] = {0, 0};
	for (int i = 0; i < 2; i++) {
		char c = *s++;
		int axis = (c == 'N' || c == 'S') ? 0 : (c == 'E' || c == 'W') ? 1 : -1;
		if (axis < 0 || seen[axis])
			return -1;
		char *end;
		double d = strtod(s, &end);
		if (end == s || d < 0 || !isfinite(d))
			return -1;
		v[axis] = (c == 'S' || c == 'W') ? -d : d;
		seen[axis] = 1;
		s = end;
		if (i == 0 && *s++ != ';')
			return -1;
	}
	if (*s)
		return -1;
	*lat = v[0];
	*lng = v[1];
	return 0;
}

int eng_position_value(const json_t *j, struct store_value *v, const char *what,
                       struct strata_error *err)
{
	double lat, lng, div = 1; /* degrees */
	const json_t *a = json_object_get(j, "lat"), *b = json_object_get(j, "lng");
	if (json_is_object(j) && !a && !b) {
		a = json_object_get(j, "y");
		b = json_object_get(j, "x");
		div = 1e6; /* millionths */
	}
	if (json_is_string(j)) {
		if (parse_text(json_string_value(j), &lat, &lng))
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "%s: '%s' is no position (as \"N63.4;E10.4\")", what,
			                json_string_value(j));
	} else if (json_is_object(j) && json_object_size(j) == 2 && json_is_number(a) &&
	           json_is_number(b)) {
		lat = json_number_value(a) / div;
		lng = json_number_value(b) / div;
	} else {
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "%s: expected a position: {\"lat\": degrees, \"lng\": degrees} or "
		                "\"N63.4;E10.4\"", what);
	}
	if (!(lat >= -90 && lat <= 90) || !(lng >= -180 && lng <= 180))
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "%s: latitude %g or longitude %g is out of range (-90 to 90, -180 to 180)",
		                what, lat, lng);
	memset(v, 0, sizeof *v);
	v->i = pack((int32_t)lround(lat * 1e6), (int32_t)lround(lng * 1e6));
	v->set = 1;
	return 0;
}

json_t *eng_position_json(int64_t packed)
{
	double lat, lng;
	unpack(packed, &lat, &lng);
	json_t *o = json_object();
	if (!o || json_object_set_new(o, "lat", eng_json_number(BASE_DT_DOUBLE, lat / 1e6)) ||
	    json_object_set_new(o, "lng", eng_json_number(BASE_DT_DOUBLE, lng / 1e6))) {
		json_decref(o);
		return NULL;
	}
	return o;
}

int eng_geo_radius(const char *s, double *out)
{
	static const struct {
		const char *unit;
		double microdeg; /* per unit */
	} units[] = {
		{"km", 1 / KM_PER_MICRODEG}, {"m", 0.001 / KM_PER_MICRODEG},
		{"mi", 1.609344 / KM_PER_MICRODEG}, {"miles", 1.609344 / KM_PER_MICRODEG},
		{"deg", 1e6},
	};
	char *end;
	double d = strtod(s, &end);
	if (end == s || !isfinite(d))
		return -1;
	while (*end == ' ')
		end++;
	if (d < 0 && !*end) {
		*out = -1;
		return 0;
	}
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
		if (!strcasecmp(end, units[i].unit)) {
			*out = d < 0 ? -1 : d * units[i].microdeg;
			return 0;
		}
	return -1;
}

/* The distance of the packed position to node n's point, in millionths. */
static double distance_to(const struct yql_node *n, int64_t packed)
{
	double lat, lng;
	unpack(packed, &lat, &lng);
	double qlat = n->lo * 1e6, qlng = n->hi * 1e6;
	double dx = (lng - qlng) * cos(n->lo * M_PI / 180), dy = lat - qlat;
	return sqrt(dx * dx + dy * dy);
}

int eng_geo_match(const struct yql_node *n, int64_t packed)
{
	return n->num < 0 || distance_to(n, packed) <= n->num;
}

double eng_geo_feature(const struct yql_node *g, int feature, const int64_t *packed)
{
	double lat = 90e6, lng = -180e6; /* Vespa's values without a position */
	if (packed)
		unpack(*packed, &lat, &lng);
	double d = g && packed ? distance_to(g, *packed) : NO_DISTANCE;
	switch (feature) {
	case RANK_TF_GEO_KM: return d * KM_PER_MICRODEG;
	case RANK_TF_GEO_LATITUDE: return lat / 1e6;
	case RANK_TF_GEO_LONGITUDE: return lng / 1e6;
	case RANK_TF_GEO_CLOSENESS: return d >= MAX_DISTANCE ? 0.0 : 1 - d / MAX_DISTANCE;
	}
	return d;
}

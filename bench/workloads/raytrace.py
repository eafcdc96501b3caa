"""Object-heavy float math, shaped like pyperformance's raytrace: a small
ray tracer (Vector, Sphere, Plane, Ray, surfaces, one light) whose every
operation allocates a new Vector. Nearly all its allocations are small
objects of Python's own allocator (pymalloc), freed at once: the case
where `--memory`'s allocator shim costs most per unit of work."""
import math

EPSILON = 1e-5


class Vector:
    __slots__ = ("x", "y", "z")

    def __init__(self, x, y, z):
        self.x = x
        self.y = y
        self.z = z

    def dot(self, other):
        return self.x * other.x + self.y * other.y + self.z * other.z

    def magnitude(self):
        return math.sqrt(self.dot(self))

    def __add__(self, other):
        return Vector(self.x + other.x, self.y + other.y, self.z + other.z)

    def __sub__(self, other):
        return Vector(self.x - other.x, self.y - other.y, self.z - other.z)

    def scale(self, factor):
        return Vector(self.x * factor, self.y * factor, self.z * factor)

    def cross(self, other):
        return Vector(self.y * other.z - self.z * other.y,
                      self.z * other.x - self.x * other.z,
                      self.x * other.y - self.y * other.x)

    def normalized(self):
        return self.scale(1.0 / self.magnitude())

    def negated(self):
        return self.scale(-1)

    def reflect_through(self, normal):
        return self - normal.scale(2 * self.dot(normal))


Vector.ZERO = Vector(0, 0, 0)
Vector.UP = Vector(0, 1, 0)


class Ray:
    __slots__ = ("point", "direction")

    def __init__(self, point, direction):
        self.point = point
        self.direction = direction.normalized()

    def point_at(self, t):
        return self.point + self.direction.scale(t)


class Sphere:
    def __init__(self, centre, radius):
        self.centre = centre
        self.radius = radius

    def intersection_time(self, ray):
        cp = self.centre - ray.point
        v = cp.dot(ray.direction)
        discriminant = self.radius * self.radius - (cp.dot(cp) - v * v)
        if discriminant < 0:
            return None
        return v - math.sqrt(discriminant)

    def normal_at(self, p):
        return (p - self.centre).normalized()


class Plane:
    def __init__(self, point, normal):
        self.point = point
        self.normal = normal.normalized()

    def intersection_time(self, ray):
        v = ray.direction.dot(self.normal)
        if v:
            return 1 / -v
        return None

    def normal_at(self, p):
        return self.normal


class Surface:
    def __init__(self, colour, specular=0.2, lambert=0.6, ambient=0.2):
        self.colour = colour
        self.specular = specular
        self.lambert = lambert
        self.ambient = ambient

    def base_colour(self, p):
        return self.colour

    def shade(self, scene, ray, p, normal, depth):
        b = self.base_colour(p)
        c = Vector.ZERO
        if self.specular > 0:
            reflected = Ray(p, ray.direction.reflect_through(normal))
            c = c + scene.ray_colour(reflected, depth + 1).scale(self.specular)
        if self.lambert > 0:
            contribution = 0
            for light in scene.lights:
                if scene.visible(light, p):
                    k = (light - p).normalized().dot(normal)
                    if k > 0:
                        contribution += k
            c = c + b.scale(self.lambert * min(1, contribution))
        return c + b.scale(self.ambient)


class Checkerboard(Surface):
    def __init__(self, colour, other, size=1.0, **kw):
        super().__init__(colour, **kw)
        self.other = other
        self.size = size

    def base_colour(self, p):
        v = p - Vector.ZERO
        v = v.scale(1.0 / self.size)
        odd = (int(abs(v.x) + 0.5) + int(abs(v.y) + 0.5) + int(abs(v.z) + 0.5)) % 2
        return self.other if odd else self.colour


class Scene:
    def __init__(self, eye, look_at, fov=45):
        self.objects = []
        self.lights = []
        self.eye = eye
        self.look_at = look_at
        self.fov = fov
        self.max_depth = 3

    def add(self, shape, surface):
        self.objects.append((shape, surface))

    def nearest(self, ray):
        best, best_t = None, None
        for shape, surface in self.objects:
            t = shape.intersection_time(ray)
            if t is not None and t > EPSILON and (best_t is None or t < best_t):
                best, best_t = (shape, surface), t
        return best, best_t

    def visible(self, light, p):
        _, t = self.nearest(Ray(p, light - p))
        return t is None or t >= (light - p).magnitude()

    def ray_colour(self, ray, depth=0):
        if depth > self.max_depth:
            return Vector.ZERO
        hit, t = self.nearest(ray)
        if hit is None:
            return Vector.ZERO
        shape, surface = hit
        p = ray.point_at(t)
        return surface.shade(self, ray, p, shape.normal_at(p), depth)

    def render(self, width, height):
        forward = (self.look_at - self.eye).normalized()
        right = forward.cross(Vector.UP).normalized()
        up = right.cross(forward).normalized()
        half = math.tan(math.radians(self.fov) / 2)
        pixels = []
        for y in range(height):
            for x in range(width):
                xc = (x - width / 2) / (width / 2) * half
                yc = -(y - height / 2) / (height / 2) * half
                direction = forward + right.scale(xc) + up.scale(yc)
                pixels.append(self.ray_colour(Ray(self.eye, direction)))
        return pixels


def main(size):
    scene = Scene(Vector(0, 1.8, 10), Vector(0, 3, 0))
    scene.lights.append(Vector(30, 30, 10))
    scene.lights.append(Vector(-10, 100, 30))
    scene.add(Sphere(Vector(1, 3, -10), 2), Surface(Vector(1, 1, 0)))
    for y in range(6):
        scene.add(Sphere(Vector(-3 - y * 0.4, 2.3, -5), 0.4),
                  Surface(Vector(y / 6.0, 1 - y / 6.0, 0.5)))
    scene.add(Plane(Vector(0, 0, 0), Vector.UP),
              Checkerboard(Vector(0, 0, 0), Vector(1, 1, 1), lambert=0.8, specular=0.2))
    pixels = main_render(scene, size)
    return sum(p.x + p.y + p.z for p in pixels)


def main_render(scene, size):
    return scene.render(size, size)


main(280)

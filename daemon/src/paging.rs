//! Pages of a listing held in memory (entities, beliefs, projects): a page size checked
//! against its method's limit, and a cursor that is the offset of the next page.

/// Page size when a request names none.
const DEFAULT_LIMIT: usize = 50;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Page {
    pub offset: usize,
    pub limit: usize,
}

impl Page {
    /// `limit` (default 50) must be 1–`max`; `cursor` must be one a previous page gave.
    pub fn new(limit: Option<usize>, max: usize, cursor: Option<&str>) -> Result<Self, String> {
        let limit = limit.unwrap_or(DEFAULT_LIMIT);
        if limit == 0 || limit > max {
            return Err(format!("limit is {limit}; it must be 1–{max}"));
        }
        let offset = match cursor {
            Some(c) => c.parse().map_err(|_| {
                format!("cursor `{c}` is not one this method gave; start without it")
            })?,
            None => 0,
        };
        Ok(Self { offset, limit })
    }

    /// This page of `items`, and the cursor of the next page when there is one.
    pub fn of<T>(&self, items: Vec<T>) -> (Vec<T>, Option<String>) {
        let total = items.len();
        let page = items
            .into_iter()
            .skip(self.offset)
            .take(self.limit)
            .collect();
        let end = self.offset + self.limit;
        (page, (end < total).then(|| end.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_walk_the_listing_and_bad_requests_are_named() {
        let first = Page::new(Some(2), 10, None).unwrap();
        let (items, next) = first.of(vec![1, 2, 3]);
        assert_eq!((items, next.as_deref()), (vec![1, 2], Some("2")));
        let second = Page::new(Some(2), 10, next.as_deref()).unwrap();
        assert_eq!(second.of(vec![1, 2, 3]), (vec![3], None));
        assert!(Page::new(Some(0), 10, None).unwrap_err().contains("1–10"));
        assert!(Page::new(Some(2), 10, Some("x"))
            .unwrap_err()
            .contains("cursor `x`"));
    }
}
